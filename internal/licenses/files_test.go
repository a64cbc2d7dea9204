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
