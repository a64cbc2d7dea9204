package main

import (
	"bytes"
	"debug/elf"
	"debug/macho"
	"fmt"
	"strings"
)

// checkBinary says what is wrong with the executable bin for target
// (os-arch): it must be of that format and architecture, and statically
// linked as far as the OS allows.
func checkBinary(bin []byte, target string) error {
	switch target {
	case "linux-amd64":
		return checkELF(bin, elf.EM_X86_64)
	case "linux-arm64":
		return checkELF(bin, elf.EM_AARCH64)
	case "darwin-amd64":
		return checkMachO(bin, macho.CpuAmd64)
	case "darwin-arm64":
		return checkMachO(bin, macho.CpuArm64)
	}
	return fmt.Errorf("no check for target %s", target)
}

// checkStamp says what is wrong unless bin carries version, which the
// build stamps into it (-X of internal/buildinfo): a binary without it was
// built without the release's LDFLAGS, or is another release's.
func checkStamp(bin []byte, version string) error {
	if !bytes.Contains(bin, []byte(version)) {
		return fmt.Errorf("does not carry its version %s: build it with make release", version)
	}
	return nil
}

// checkELF says what is wrong unless bin is an ELF executable for machine
// with no interpreter (the dynamic loader) and no shared library needed.
func checkELF(bin []byte, machine elf.Machine) error {
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not an ELF executable: %v", err)
	}
	defer f.Close()
	if f.Machine != machine {
		return fmt.Errorf("built for %v, want %v", f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("dynamically linked (it names an interpreter): build with CGO_ENABLED=0")
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		return fmt.Errorf("needs shared libraries %v: build with CGO_ENABLED=0", libs)
	}
	return nil
}

// checkMachO says what is wrong unless bin is a Mach-O executable for cpu
// that links only libraries every macOS has (libSystem and the system's
// frameworks, which Go itself calls): no cgo library.
func checkMachO(bin []byte, cpu macho.Cpu) error {
	f, err := macho.NewFile(bytes.NewReader(bin))
	if err != nil {
		return fmt.Errorf("not a Mach-O executable: %v", err)
	}
	defer f.Close()
	if f.Cpu != cpu {
		return fmt.Errorf("built for %v, want %v", f.Cpu, cpu)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading its libraries: %v", err)
	}
	for _, l := range libs {
		if !strings.HasPrefix(l, "/usr/lib/") && !strings.HasPrefix(l, "/System/Library/") {
			return fmt.Errorf("links %s, not the system's: build with CGO_ENABLED=0", l)
		}
	}
	return nil
}
