package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/runtime"
)

// ImageTag is the image an environment builds to: its name and the first
// 12 hex digits of its content hash, so an unchanged environment is not
// rebuilt and a changed one never reuses a stale image.
func ImageTag(e *env.Env) (string, error) {
	h, err := e.Hash()
	if err != nil {
		return "", fmt.Errorf("hash environment %s: %w", e.Dir, err)
	}
	return fmt.Sprintf("chalk-%s:%s", e.Name, h[:12]), nil
}

// DevTag is the image a --dev run uses: tagged by the Containerfile and
// .dockerignore alone, so that editing any other file of the environment
// (which a --dev run mounts live) does not rebuild it.
func DevTag(e *env.Env) (string, error) {
	h := sha256.New()
	for _, p := range []string{e.Containerfile, filepath.Join(e.Dir, ".dockerignore")} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.Base(p), len(b))
		h.Write(b)
	}
	return fmt.Sprintf("chalk-%s:dev-%s", e.Name, hex.EncodeToString(h.Sum(nil))[:12]), nil
}

// Build makes sure the environment's image exists on rt, building it when
// it does not (or always, with force). It returns the tag, the image, and
// whether it built. The build log streams to log.
func Build(ctx context.Context, rt runtime.Runtime, e *env.Env, force bool, log io.Writer) (string, *runtime.ImageInfo, bool, error) {
	tag, err := ImageTag(e)
	if err != nil {
		return "", nil, false, err
	}
	return buildTag(ctx, rt, e, tag, force, log)
}

// Image is a run's image on its runtime, ready to run, and the chalk
// binary that runs as the harness inside it.
type Image struct {
	Tag     string
	Harness string // HarnessBinary for the image's architecture
}

// Prepare makes sure the image of the run o exists (Build, or BuildDev
// for a --dev run) and finds the harness binary for it. The runs of -n
// share what it returns, in Options.Image: they run one environment on
// one runtime, so one check holds for all of them, and every run runs the
// same image even if the environment changes while they run.
func Prepare(ctx context.Context, o Options) (*Image, error) {
	build := Build
	if o.DevMount != "" {
		build = BuildDev
	}
	tag, info, _, err := build(ctx, o.Runtime, o.Env, o.Rebuild, o.BuildLog)
	if err != nil {
		return nil, err
	}
	bin, err := HarnessBinary(info.Architecture)
	if err != nil {
		return nil, err
	}
	return &Image{Tag: tag, Harness: bin}, nil
}

// BuildDev is Build for a --dev run: see DevTag.
func BuildDev(ctx context.Context, rt runtime.Runtime, e *env.Env, force bool, log io.Writer) (string, *runtime.ImageInfo, bool, error) {
	tag, err := DevTag(e)
	if err != nil {
		return "", nil, false, err
	}
	return buildTag(ctx, rt, e, tag, force, log)
}

func buildTag(ctx context.Context, rt runtime.Runtime, e *env.Env, tag string, force bool, log io.Writer) (string, *runtime.ImageInfo, bool, error) {
	if !force {
		info, err := rt.Image(ctx, tag)
		if err != nil {
			return "", nil, false, err
		}
		if info != nil {
			return tag, info, false, nil
		}
	}
	err := rt.Build(ctx, runtime.BuildRequest{
		Dir:           e.Dir,
		Containerfile: e.Containerfile,
		Tag:           tag,
		Labels:        map[string]string{LabelEnv: e.Name},
		Output:        log,
	})
	if err != nil {
		return "", nil, false, err
	}
	info, err := rt.Image(ctx, tag)
	if err != nil {
		return "", nil, false, err
	}
	if info == nil {
		return "", nil, false, fmt.Errorf("build %s: the build succeeded but %s has no image %s", e.Dir, rt.Name(), tag)
	}
	return tag, info, true, nil
}
