package licenses

import (
	"os"
	"path/filepath"
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
