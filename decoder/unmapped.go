package decoder

// maxUnmappedPrefixes bounds the prefixes a Decoder keeps as strings for
// KindUnmappedMessage; past it, each message's prefix is a new string.
const maxUnmappedPrefixes = 64

// unmappedPrefix returns prefix as a string, the same string for each
// message of a prefix seen before (up to maxUnmappedPrefixes of them): a
// stream of unmapped messages allocates no string per message.
func (d *Decoder) unmappedPrefix(prefix []byte) string {
	if s, ok := d.unmapped[string(prefix)]; ok {
		return s
	}
	s := string(prefix)
	if len(d.unmapped) < maxUnmappedPrefixes {
		if d.unmapped == nil {
			d.unmapped = make(map[string]string)
		}
		d.unmapped[s] = s
	}
	return s
}
