package licenses

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

const (
	mitText = `Copyright (c) 2019 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction.

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.`

	bsd2Text = `Copyright (c) 2015, Someone
All rights reserved.

Redistribution and use in source and binary forms, with or without
modification, are permitted provided that the following conditions are met:

* Redistributions of source code must retain the above copyright notice, this
  list of conditions and the following disclaimer.
* Redistributions in binary form must reproduce the above copyright notice,
  this list of conditions and the following disclaimer in the documentation.`

	bsd3Text = bsd2Text + `
* Neither the name of the copyright holder nor the names of its
  contributors may be used to endorse or promote products derived from
  this software without specific prior written permission.`

	iscText = `Copyright (c) 2020 Someone

Permission to use, copy, modify, and/or distribute this software for any
purpose with or without fee is hereby granted, provided that the above
copyright notice and this permission notice appear in all copies.`

	apacheNotice = `Copyright 2011 Someone

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.`

	mplText = `Mozilla Public License Version 2.0
==================================

1.1. "Contributor"
    means each individual or legal entity that creates, contributes to
    the creation of, or owns Covered Software.

1.13. "Secondary License"
    means either the GNU General Public License, Version 2.0, the GNU
    Lesser General Public License, Version 2.1, the GNU Affero General
    Public License, Version 3.0, or any later versions of those
    licenses.`

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
		{"whitespace, case and comment markers do not count", "// PERMISSION IS HEREBY GRANTED, free of charge,\n// to any person obtaining a copy of this software and associated\n// documentation files. The above copyright notice and this permission\n// notice shall be included in all copies or substantial portions of the Software.", "MIT", nil},
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
