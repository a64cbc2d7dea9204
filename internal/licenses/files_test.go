package licenses

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFind(t *testing.T) {
	tests := []struct {
		name        string
		files       map[string]string
		wantLicense string
		wantNotice  string
		wantErr     string
	}{
		{"LICENSE and NOTICE", map[string]string{"LICENSE": mitText, "NOTICE": "Product X\r\nCopyright Y\r\n\r\n", "go.mod": "module x"},
			mitText + "\n", "Product X\nCopyright Y\n", ""},
		{"LICENSE.txt", map[string]string{"LICENSE.txt": iscText}, iscText + "\n", "", ""},
		{"license.md, in lower case", map[string]string{"license.md": bsd3Text}, bsd3Text + "\n", "", ""},
		{"COPYING", map[string]string{"COPYING": gplText}, gplText + "\n", "", ""},
		{"no license file", map[string]string{"README.md": "x"}, "", "", "has no LICENSE file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := Find([]Module{{Path: "example.com/m", Version: "v1.2.3", Dir: dir}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "example.com/m v1.2.3") {
					t.Fatalf("Find: error %v, want one naming the module and saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			e := entries[0]
			if e.License != tt.wantLicense || e.Notice != tt.wantNotice {
				t.Errorf("Find: license %q, notice %q; want %q, %q", e.License, e.Notice, tt.wantLicense, tt.wantNotice)
			}
			if got, want := e.Classification.Expression(), Classify(tt.wantLicense).Expression(); got != want {
				t.Errorf("classified as %s, want %s", got, want)
			}
		})
	}
}

// TestFindSeveralLicenseFiles checks that every license file of a module's
// root is read, classified and kept, and that any refused one refuses the
// module.
func TestFindSeveralLicenseFiles(t *testing.T) {
	tests := []struct {
		name       string
		files      map[string]string
		expression string
		refused    []string
		others     []string
	}{
		{"LICENSE-APACHE and LICENSE-MIT", map[string]string{"LICENSE-APACHE": apacheNotice, "LICENSE-MIT": mitText},
			"Apache-2.0 AND MIT", nil, []string{"LICENSE-MIT"}},
		{"LICENSE and COPYING: both read, GPL refuses", map[string]string{"LICENSE": mitText, "COPYING": gplText},
			"MIT AND GPL-3.0", []string{"GPL-3.0"}, []string{"LICENSE"}},
		{"an unknown second file refuses the module", map[string]string{"LICENSE": mitText, "LICENSE_extra.txt": unknownText},
			Unknown, []string{Unknown}, []string{"LICENSE_extra.txt"}},
		{"an add-on in a second file refuses the module", map[string]string{"LICENSE": apacheNotice, "LICENSE-COMMONS-CLAUSE": commonsClause + "\n\n" + apacheNotice},
			Unknown, []string{"unknown: adds the Commons Clause (it forbids selling the software)"}, []string{"LICENSE-COMMONS-CLAUSE"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			entries, err := Find([]Module{{Path: "example.com/m", Version: "v1.2.3", Dir: dir}})
			if err != nil {
				t.Fatal(err)
			}
			e := entries[0]
			if got := e.Classification.Expression(); got != tt.expression {
				t.Errorf("Expression() = %q, want %q", got, tt.expression)
			}
			if got := e.Classification.Refused(); !reflect.DeepEqual(got, tt.refused) {
				t.Errorf("Refused() = %q, want %q", got, tt.refused)
			}
			var others []string
			for _, o := range e.Others {
				others = append(others, o.Name)
				if o.Text == "" {
					t.Errorf("%s was read empty", o.Name)
				}
			}
			if !reflect.DeepEqual(others, tt.others) {
				t.Errorf("Others = %q, want %q", others, tt.others)
			}
			var notices strings.Builder
			if err := WriteNotices(&notices, entries); err != nil {
				t.Fatal(err)
			}
			for _, o := range e.Others {
				if !strings.Contains(notices.String(), "--- "+o.Name+" ---\n\n"+o.Text) {
					t.Errorf("the notices lack %s", o.Name)
				}
			}
		})
	}
}

// TestFindPackageLicenseFiles checks that the license and NOTICE files
// between a linked package and its module's root count, and that those of
// packages not linked do not.
func TestFindPackageLicenseFiles(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"LICENSE":                          mitText,
		"zstd/internal/xxhash/LICENSE.txt": bsd3Text,
		"zstd/internal/xxhash/NOTICE":      "xxhash notice",
		"unlinked/COPYING":                 gplText,
	}
	for name, text := range files {
		path := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	linked := filepath.Join(root, "zstd", "internal", "xxhash")
	entries, err := Find([]Module{{Path: "example.com/m", Version: "v1.2.3", Dir: root, PackageDirs: []string{root, linked}}})
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if got, want := e.Classification.Expression(), "MIT AND BSD-3-Clause"; got != want {
		t.Errorf("Expression() = %q, want %q", got, want)
	}
	var names []string
	for _, o := range e.Others {
		names = append(names, o.Name)
	}
	if want := []string{"zstd/internal/xxhash/LICENSE.txt", "zstd/internal/xxhash/NOTICE"}; !reflect.DeepEqual(names, want) {
		t.Errorf("Others = %q, want %q", names, want)
	}
}
