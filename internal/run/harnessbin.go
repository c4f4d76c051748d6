package run

import (
	"debug/elf"
	"fmt"
	"os"
	goruntime "runtime"

	"github.com/chalk-rl/chalk/internal/hint"
)

// HarnessEnv names a chalk binary to run as the harness instead of this
// one: for a sandbox of another architecture, or when this binary is not
// static.
const HarnessEnv = "CHALK_HARNESS_BINARY"

// HarnessBinary returns the path of a static Linux chalk binary for arch
// (GOARCH spelling, e.g. amd64), to put into the sandbox.
func HarnessBinary(arch string) (string, error) {
	if arch == "" {
		arch = goruntime.GOARCH
	}
	path := os.Getenv(HarnessEnv)
	from := HarnessEnv
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return "", fmt.Errorf("find the chalk binary: %w", err)
		}
		path, from = exe, "this chalk"
	}
	if err := checkStatic(path, arch); err != nil {
		return "", hint.Wrap(fmt.Errorf("%s (%s) cannot run inside the sandbox: %w", path, from, err),
			fmt.Sprintf("build a static chalk for the sandbox and point %s at it:\n  CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -o chalk-linux-%s ./cmd/chalk\n  export %s=$PWD/chalk-linux-%s", HarnessEnv, arch, arch, HarnessEnv, arch))
	}
	return path, nil
}

var elfMachine = map[string]elf.Machine{
	"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386,
	"arm": elf.EM_ARM, "riscv64": elf.EM_RISCV, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390,
}

func checkStatic(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("not a Linux executable: %w", err)
	}
	defer f.Close()
	if want, ok := elfMachine[arch]; ok && f.Machine != want {
		return fmt.Errorf("it is built for %s, the sandbox's image is %s", f.Machine, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("it is dynamically linked (built with cgo), and the image may lack its libraries")
		}
	}
	return nil
}
