package licenses

import (
	"strings"
	"unicode"
)

// Unknown is the identifier of a license text that [Classify] does not
// recognise.
const Unknown = "unknown"

// kind is one license the classifier recognises: it matches a text that
// contains every phrase of at least one of its alternatives.
type kind struct {
	id           string
	allowed      bool
	alternatives [][]string
	// supersededBy: kinds that, when also found, say more (BSD-3-Clause's
	// clauses include BSD-2-Clause's).
	supersededBy []string
}

// licenseKinds returns the kinds the classifier knows, in the order a
// compound license's identifiers are listed.
func licenseKinds() []kind {
	return []kind{
		{id: "Apache-2.0", allowed: true, alternatives: [][]string{
			{"apache license version 2.0 january 2004", "terms and conditions for use reproduction and distribution"},
			{"licensed under the apache license version 2.0", "you may not use this file except in compliance with the license"},
		}},
		{id: "MIT", allowed: true, alternatives: [][]string{{
			"permission is hereby granted free of charge to any person obtaining a copy of this software and associated documentation files",
			"the above copyright notice and this permission notice shall be included in all copies or substantial portions of the software",
		}}},
		{id: "BSD-3-Clause", allowed: true, alternatives: [][]string{{
			"redistribution and use in source and binary forms with or without modification are permitted provided that",
			"redistributions of source code must retain the above copyright notice",
			"redistributions in binary form must reproduce the above copyright notice",
			"neither the name of",
			"may be used to endorse or promote products derived from this software without specific prior written permission",
		}}},
		{id: "BSD-2-Clause", allowed: true, supersededBy: []string{"BSD-3-Clause"}, alternatives: [][]string{{
			"redistribution and use in source and binary forms with or without modification are permitted provided that",
			"redistributions of source code must retain the above copyright notice",
			"redistributions in binary form must reproduce the above copyright notice",
		}}},
		{id: "ISC", allowed: true, alternatives: [][]string{{
			"permission to use copy modify and/or distribute this software for any purpose with or without fee is hereby granted provided that the above copyright notice and this permission notice appear in all copies",
		}}},
		{id: "MPL-2.0", allowed: true, alternatives: [][]string{
			{"mozilla public license version 2.0", "contributor means each individual or legal entity that creates contributes to the creation of or owns covered software"},
			{"this source code form is subject to the terms of the mozilla public license v. 2.0"},
		}},
		{id: "GPL-2.0", alternatives: [][]string{{"gnu general public license version 2 june 1991"}}},
		{id: "GPL-3.0", alternatives: [][]string{{"gnu general public license version 3 29 june 2007"}}},
		{id: "GPL", supersededBy: []string{"GPL-2.0", "GPL-3.0"}, alternatives: [][]string{
			{"under the terms of the gnu general public license as published by the free software foundation"},
		}},
		{id: "LGPL-2.0", alternatives: [][]string{{"gnu library general public license version 2 june 1991"}}},
		{id: "LGPL-2.1", alternatives: [][]string{{"gnu lesser general public license version 2.1 february 1999"}}},
		{id: "LGPL-3.0", alternatives: [][]string{{"gnu lesser general public license version 3 29 june 2007"}}},
		{id: "LGPL", supersededBy: []string{"LGPL-2.0", "LGPL-2.1", "LGPL-3.0"}, alternatives: [][]string{
			{"under the terms of the gnu lesser general public license as published by the free software foundation"},
			{"under the terms of the gnu library general public license as published by the free software foundation"},
		}},
		{id: "AGPL-3.0", alternatives: [][]string{{"gnu affero general public license version 3 19 november 2007"}}},
		{id: "AGPL", supersededBy: []string{"AGPL-3.0"}, alternatives: [][]string{
			{"under the terms of the gnu affero general public license as published by the free software foundation"},
		}},
		{id: "SSPL-1.0", alternatives: [][]string{{"server side public license"}}},
		{id: "BUSL-1.1", alternatives: [][]string{{"business source license"}}},
	}
}

// Classification is what [Classify] found in one license text.
type Classification struct {
	// IDs are the licenses found, in a fixed order; none means unknown.
	IDs []string
	// Reason, when set, says why the text is refused although it holds an
	// allowed license's clauses: an add-on clause, or text beyond or
	// missing from the license. IDs is then empty.
	Reason string
}

// Classify returns the licenses whose distinctive clauses all appear in
// text, after normalization (case, punctuation, line breaks and spacing do
// not count). A kind that another found kind supersedes is left out.
// When only allowed licenses are found, the text must also be theirs: a
// known add-on clause (the Commons Clause, "Good, not Evil") refuses it,
// and so does more than a few words outside the licenses' canonical
// texts, or a canonical text not nearly all there (copyright lines do not
// count).
func Classify(text string) Classification {
	norm := normalize(text)
	if reason := addOn(norm); reason != "" {
		return Classification{Reason: "unknown: adds " + reason}
	}
	c := Classification{IDs: foundIDs(norm)}
	if len(c.IDs) > 0 && len(c.Refused()) == 0 {
		if reason := coverage(text, c.IDs); reason != "" {
			return Classification{Reason: reason}
		}
	}
	return c
}

// foundIDs returns the kinds whose clauses norm holds, in licenseKinds'
// order, without those a found kind supersedes.
func foundIDs(norm string) []string {
	kinds := licenseKinds()
	found := map[string]bool{}
	for _, k := range kinds {
		if k.matches(norm) {
			found[k.id] = true
		}
	}
	var ids []string
	for _, k := range kinds {
		if found[k.id] && !k.superseded(found) {
			ids = append(ids, k.id)
		}
	}
	return ids
}

// Expression is the classification as an SPDX expression: the identifiers
// joined by AND (each applies to a part of the module), or "unknown".
func (c Classification) Expression() string {
	if len(c.IDs) == 0 {
		return Unknown
	}
	return strings.Join(c.IDs, " AND ")
}

// Refused returns the identifiers that do not allow distributing the
// binary under Apache-2.0: every refused license found, or "unknown" when
// none was recognised, or the Reason. Empty means allowed.
func (c Classification) Refused() []string {
	if c.Reason != "" {
		return []string{c.Reason}
	}
	if len(c.IDs) == 0 {
		return []string{Unknown}
	}
	var refused []string
	for _, id := range c.IDs {
		if !allowed(id) {
			refused = append(refused, id)
		}
	}
	return refused
}

func allowed(id string) bool {
	for _, k := range licenseKinds() {
		if k.id == id {
			return k.allowed
		}
	}
	return false
}

func (k kind) matches(norm string) bool {
	for _, phrases := range k.alternatives {
		all := true
		for _, p := range phrases {
			if !strings.Contains(norm, normalize(p)) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (k kind) superseded(found map[string]bool) bool {
	for _, id := range k.supersededBy {
		if found[id] {
			return true
		}
	}
	return false
}

// normalize lowercases text and turns every run of characters that are
// not letters or digits into one space, so that line breaks, comment
// markers, quotes and punctuation do not count.
func normalize(text string) string {
	var b strings.Builder
	b.Grow(len(text) + 2)
	b.WriteByte(' ')
	space := true
	for _, r := range strings.ToLower(text) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	if !space {
		b.WriteByte(' ')
	}
	return b.String()
}
