package binaries

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// recipe is how a component is built: the function that runs the build and the name that
// stands for it in the component's recipe hash and build log. Each recipe is declared next to
// its build function: the generic ones below, the others in the file of the datapath or
// runtime whose component they build (cilium.go, flannel.go, ...).
type recipe struct {
	// name enters RecipeHash as its "kind=" line, so it must never change for a recipe that
	// exists: a new name is a new stamp, and every cache rebuilds the component (Cilium or
	// Kubernetes alone take minutes, a cold CI run 45). The recipes that were numbered build
	// kinds keep the name their number printed as ("kind-100" for cilium, ...); a new recipe
	// may take any name no other recipe has.
	name string
	// build writes the component's Binaries into out, using scratch for anything else
	// (module copies, generated modules); Cache.build smoke-tests and installs the result.
	build func(ctx context.Context, c Cache, log io.Writer, comp Component, scratch, out string) error
}

// plainRecipe makes the recipe of a build that needs nothing of the cache but its scratch
// and output dirs, which is every recipe but the cargo builds' (youki's, STREAM's).
func plainRecipe(name string, build func(ctx context.Context, log io.Writer, comp Component, scratch, out string) error) recipe {
	return recipe{name: name, build: func(ctx context.Context, _ Cache, log io.Writer, comp Component, scratch, out string) error {
		return build(ctx, log, comp, scratch, out)
	}}
}

// runRecipe runs the component's recipe. A component without one is a mistake in its
// declaration (TestEveryComponentHasARecipe catches it); it fails here rather than panic.
func (c Cache) runRecipe(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	if comp.recipe.build == nil {
		return fmt.Errorf("component %s declares no build recipe", comp.Name)
	}
	return comp.recipe.build(ctx, c, log, comp, scratch, out)
}

// goInstallRecipe runs `go install pkg@version` for each of the component's packages.
func goInstallRecipe() recipe { return plainRecipe("go-install", buildGoInstall) }

// buildGoInstall deliberately omits -trimpath: these are the exact commands
// used to warm the machine's build cache, and -trimpath would change every
// compile action's cache key.
func buildGoInstall(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	args := []string{"install"}
	if comp.ldflags != "" {
		args = append(args, "-ldflags="+comp.ldflags)
	}
	if len(comp.tags) > 0 {
		args = append(args, "-tags="+strings.Join(comp.tags, ","))
	}
	for _, p := range comp.packages {
		args = append(args, p+"@"+comp.Version)
	}
	return runGo(ctx, log, scratch, goEnv("GOBIN="+out), nil, args...)
}

// k8sWrapperRecipe builds inside a generated wrapper module, because k8s.io/kubernetes uses
// replace directives that `go install` rejects.
func k8sWrapperRecipe() recipe { return plainRecipe("k8s-wrapper", buildK8sWrapper) }

// buildK8sWrapper builds the Kubernetes commands through a generated module
// that requires k8s.io/kubernetes and repeats its staging replace directives
// with published versions. All commands go into one go build so shared
// packages are compiled once.
func buildK8sWrapper(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	info, err := modDownload(ctx, log, scratch, comp.Module, comp.Version)
	if err != nil {
		return err
	}
	gomod, err := os.ReadFile(info.GoMod)
	if err != nil {
		return fmt.Errorf("read %s go.mod: %w", comp.Module, err)
	}
	staging, err := parseStagingModules(string(gomod))
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "# %d staging modules: %s\n", len(staging), strings.Join(staging, " "))
	wrapper, err := wrapperGoMod(comp.Version, staging)
	if err != nil {
		return err
	}
	dir := filepath.Join(scratch, "k8sbuild")
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("create wrapper module: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(wrapper), 0o644); err != nil {
		return fmt.Errorf("write wrapper go.mod: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.go"), []byte(wrapperToolsGo(comp.packages)), 0o644); err != nil {
		return fmt.Errorf("write wrapper tools.go: %w", err)
	}
	if err := runGo(ctx, log, dir, goEnv(), nil, "mod", "tidy"); err != nil {
		return err
	}
	args := []string{"build", "-trimpath", "-ldflags", comp.ldflags, "-o", out + string(filepath.Separator)}
	args = append(args, comp.packages...)
	return runGo(ctx, log, dir, goEnv(), nil, args...)
}

// writableModule downloads the component's module and copies it under scratch: the module
// cache copy is read-only, and the builds need to write (go.sum, patches).
func writableModule(ctx context.Context, log io.Writer, comp Component, scratch string) (string, error) {
	info, err := modDownload(ctx, log, scratch, comp.Module, comp.Version)
	if err != nil {
		return "", err
	}
	src := filepath.Join(scratch, "src")
	if err := copyTree(info.Dir, src); err != nil {
		return "", fmt.Errorf("copy module %s: %w", comp.Module, err)
	}
	return src, nil
}

// goBinary is one binary of a component built from a package of its module.
type goBinary struct {
	name string // file name in the cache
	pkg  string // package relative to the module root
	tags []string
}

// buildBinaries runs one go build per binary in the module copy src, with the component's
// ldflags, for components whose binaries need names or build tags of their own.
func buildBinaries(ctx context.Context, log io.Writer, comp Component, src, out string, bins ...goBinary) error {
	for _, b := range bins {
		args := []string{"build", "-trimpath"}
		if len(b.tags) > 0 {
			args = append(args, "-tags", strings.Join(b.tags, ","))
		}
		args = append(args, "-ldflags", comp.ldflags, "-o", filepath.Join(out, b.name), b.pkg)
		if err := runGo(ctx, log, src, goEnv(), nil, args...); err != nil {
			return fmt.Errorf("build %s: %w", b.name, err)
		}
	}
	return nil
}

// moduleCopyRecipe builds the component's packages inside a writable copy of the downloaded
// module, because its replace directives defeat `go install`.
func moduleCopyRecipe() recipe { return plainRecipe("module-copy", buildModuleCopy) }

// buildModuleCopy builds inside a writable copy of the downloaded module:
// the module cache copy is read-only, and `go install mod@v` refuses modules
// whose go.mod has replace directives.
func buildModuleCopy(ctx context.Context, log io.Writer, comp Component, scratch, out string) error {
	src, err := writableModule(ctx, log, comp, scratch)
	if err != nil {
		return err
	}
	args := []string{"build", "-trimpath"}
	if len(comp.tags) > 0 {
		args = append(args, "-tags", strings.Join(comp.tags, ","))
	}
	if comp.ldflags != "" {
		args = append(args, "-ldflags", comp.ldflags)
	}
	args = append(args, "-o", out+string(filepath.Separator))
	args = append(args, comp.packages...)
	return runGo(ctx, log, src, goEnv(), nil, args...)
}
