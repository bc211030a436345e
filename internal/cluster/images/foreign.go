package images

import (
	"context"
	"fmt"
	"runtime"
)

// foreignSetupHook lays out the root filesystem of another architecture before any package is
// extracted: the merged /usr symlinks (which bookworm's packages expect, and which the host's
// variant gets from mmdebstrap's merged-usr hook, whose usr-is-merged package runs maintainer
// scripts), and the passwd and group files base-passwd's maintainer script would write, with
// the two accounts the tools run as.
const foreignSetupHook = `mkdir -p "$1/usr/bin" "$1/usr/sbin" "$1/usr/lib" "$1/etc" "$1/root" "$1/tmp" && ` +
	`ln -s usr/bin "$1/bin" && ln -s usr/sbin "$1/sbin" && ln -s usr/lib "$1/lib" && ` +
	`chmod 1777 "$1/tmp" && ` +
	`printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' > "$1/etc/passwd" && ` +
	`printf 'root:x:0:\nnogroup:x:65534:\n' > "$1/etc/group"`

// foreignPackages are the packages of the tools root filesystem for another architecture: the
// tools, and the few Essential ones a pod's command needs (a shell, sleep, grep, sed); the
// extract variant installs nothing else but their dependencies.
func foreignPackages() []string {
	return append(ToolsPackages(), "base-files", "bash", "dash", "coreutils", "grep", "sed", "util-linux")
}

// foreignRootfsSpec describes the tools root filesystem for arch, another architecture than
// this machine's, assembled without emulation: mmdebstrap's extract variant resolves the
// packages and their dependencies with apt for arch and unpacks them (dpkg-deb), running no
// maintainer script and nothing of arch. The tools need no configuration a maintainer script
// would make, beyond what foreignSetupHook writes.
func foreignRootfsSpec(ctx context.Context, mmdebstrap, arch string) (rootfsSpec, error) {
	s, err := toolsRootfsSpec(ctx, mmdebstrap)
	if err != nil {
		return rootfsSpec{}, err
	}
	s.Variant = "extract"
	s.Packages = foreignPackages()
	s.HookDirs = nil
	s.SetupHooks = append([]string{foreignSetupHook}, s.SetupHooks...)
	s.Arch = arch
	return s, nil
}

// foreign reports whether the spec is for another architecture than this machine's.
func (s rootfsSpec) foreign() bool { return s.Arch != runtime.GOARCH }

// CheckArch returns an error unless the tools image can be built for arch: this machine's, or
// arm64 from amd64 (the one pair whose packages and toolchains are checked).
func CheckArch(arch string) error {
	if arch == runtime.GOARCH || arch == "arm64" && runtime.GOARCH == "amd64" {
		return nil
	}
	return fmt.Errorf("the tools image cannot be built for %s on this %s machine (%s and arm64 from amd64 can)",
		arch, runtime.GOARCH, runtime.GOARCH)
}

// MultiarchTriplet is the directory below /usr/lib in which Debian puts goarch's shared
// libraries, where the tools image's binaries find theirs.
func MultiarchTriplet(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	}
	return goarch + "-linux-gnu"
}
