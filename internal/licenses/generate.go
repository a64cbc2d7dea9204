package licenses

import "context"

// Collect lists the modules of pkg (run in dir) for the release targets,
// reads their license files and classifies them: what WriteReport,
// WriteNotices and Check take.
func Collect(ctx context.Context, dir, pkg string) ([]Entry, error) {
	mods, err := List(ctx, dir, pkg, ReleaseTargets())
	if err != nil {
		return nil, err
	}
	return Find(mods)
}
