package licenses

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// template returns the canonical text of a license, as the classifier
// keeps it; a test adds its own copyright line.
func template(name string) string {
	b, err := templates.ReadFile("templates/" + name)
	if err != nil {
		panic(err)
	}
	return strings.TrimRight(string(b), "\n")
}

var (
	mitText      = "Copyright (c) 2019 Someone\n\n" + template("MIT.txt")
	bsd2Text     = "Copyright (c) 2015, Someone\nAll rights reserved.\n\n" + template("BSD-2-Clause.txt")
	bsd3Text     = "Copyright (c) 2015, Someone\nAll rights reserved.\n\n" + template("BSD-3-Clause.txt")
	iscText      = "Copyright (c) 2020 Someone\n\n" + template("ISC.txt")
	apacheNotice = "Copyright 2011 Someone\n\n" + template("Apache-2.0-notice.txt")
	mplText      = template("MPL-2.0.txt")
)

// commonsClause is the clause added to Apache-2.0 to forbid selling.
const commonsClause = `"Commons Clause" License Condition v1.0

The Software is provided to you by the Licensor under the License, as defined
below, subject to the following condition.

Without limiting other conditions in the License, the grant of rights under
the License will not include, and the License does not grant to you, the right
to Sell the Software.`

const (
	gplText = `                    GNU GENERAL PUBLIC LICENSE
                       Version 3, 29 June 2007

 Copyright (C) 2007 Free Software Foundation, Inc. <https://fsf.org/>`

	lgplNotice = `This library is free software; you can redistribute it and/or
modify it under the terms of the GNU Lesser General Public
License as published by the Free Software Foundation; either
version 2.1 of the License, or (at your option) any later version.`

	ssplText = `Server Side Public License
VERSION 1, OCTOBER 16, 2018`

	unknownText = `Copyright 2024 Someone. You may use this software to do good, not evil.`
)

func TestClassify(t *testing.T) {
	apacheFull, err := os.ReadFile("../../LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		text       string
		expression string
		refused    []string
	}{
		{"MIT", mitText, "MIT", nil},
		{"BSD-2-Clause", bsd2Text, "BSD-2-Clause", nil},
		{"BSD-3-Clause, not also BSD-2-Clause", bsd3Text, "BSD-3-Clause", nil},
		{"ISC", iscText, "ISC", nil},
		{"Apache-2.0's notice", apacheNotice, "Apache-2.0", nil},
		{"Apache-2.0's full text (the repository's LICENSE)", string(apacheFull), "Apache-2.0", nil},
		{"MPL-2.0, which names the GNU licenses without being one", mplText, "MPL-2.0", nil},
		{"several licenses in one file", "#### MIT ####\n" + mitText + "\n### Apache ###\n" + apacheNotice, "Apache-2.0 AND MIT", nil},
		{"whitespace, case and comment markers do not count", "// " + strings.ToUpper(strings.ReplaceAll(mitText, "\n", "\n//   ")), "MIT", nil},
		{"MIT with Good, not Evil (the JSON license) is refused by name", mitText + "\nThe Software shall be used for Good, not Evil.\n", Unknown,
			[]string{`unknown: adds "Good, not Evil" (the JSON license's use restriction)`}},
		{"Apache-2.0 with the Commons Clause is refused by name", commonsClause + "\n\n" + apacheNotice, Unknown,
			[]string{"unknown: adds the Commons Clause (it forbids selling the software)"}},
		{"MIT with one sentence of restriction is refused", mitText + "\nThe Software may not be used for military purposes.\n", Unknown,
			[]string{"unknown: text beyond the license"}},
		{"MIT without its disclaimer is refused", mitText[:strings.Index(mitText, "THE SOFTWARE IS PROVIDED")], Unknown,
			[]string{"unknown: part of the MIT text is missing or changed"}},
		{"Apache-2.0 with a paragraph removed is refused", strings.Replace(string(apacheFull), "7. Disclaimer of Warranty.", "", 1)[:len(apacheFull)/2], Unknown,
			[]string{"unknown: part of the Apache-2.0 text is missing or changed"}},
		{"a compound file with a heading over each license is their union", "MIT and BSD-3-Clause.\n\n#### MIT ####\n" + mitText + "\n------\nFiles: internal/x/*\n\n" + bsd3Text, "MIT AND BSD-3-Clause", nil},
		{"a sentence added to one license of a compound file is refused", mitText + "\n\n" + bsd3Text + "\nYou may not use this software to build a competing product.\n", Unknown,
			[]string{"unknown: text beyond the license"}},
		{"GPL-3.0 is refused", gplText, "GPL-3.0", []string{"GPL-3.0"}},
		{"LGPL by its notice is refused", lgplNotice, "LGPL", []string{"LGPL"}},
		{"SSPL is refused", ssplText, "SSPL-1.0", []string{"SSPL-1.0"}},
		{"GPL beside an allowed license is refused", mitText + "\n\n" + gplText, "MIT AND GPL-3.0", []string{"GPL-3.0"}},
		{"an unknown license is refused", unknownText, Unknown, []string{Unknown}},
		{"an empty file is unknown", "", Unknown, []string{Unknown}},
		{"half of MIT is unknown", "Permission is hereby granted, free of charge, to any person obtaining a copy of this software and associated documentation files.", Unknown, []string{Unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Classify(tt.text)
			if got := c.Expression(); got != tt.expression {
				t.Errorf("Expression() = %q, want %q", got, tt.expression)
			}
			if got := c.Refused(); !reflect.DeepEqual(got, tt.refused) {
				t.Errorf("Refused() = %q, want %q", got, tt.refused)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	entry := func(path, text string) Entry {
		return Entry{Module: Module{Path: path, Version: "v1.0.0"}, Classification: Classify(text)}
	}
	tests := []struct {
		name    string
		entries []Entry
		wantErr []string // substrings of the error; nil: no error
	}{
		{"all allowed", []Entry{entry("example.com/a", mitText), entry("example.com/b", mplText)}, nil},
		{"GPL and unknown are named", []Entry{
			entry("example.com/ok", mitText), entry("example.com/gpl", gplText), entry("example.com/odd", unknownText),
		}, []string{"example.com/gpl v1.0.0: GPL-3.0", "example.com/odd v1.0.0: unknown", "remove or replace the dependency"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.entries)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Check: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Check returned nil, want an error")
			}
			for _, s := range tt.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("Check's error %q does not say %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "example.com/ok") {
				t.Errorf("Check's error %q names an allowed module", err)
			}
		})
	}
}
