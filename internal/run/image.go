package run

import (
	"context"
	"fmt"
	"io"

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

// Build makes sure the environment's image exists on rt, building it when
// it does not (or always, with force). It returns the tag, the image, and
// whether it built. The build log streams to log.
func Build(ctx context.Context, rt runtime.Runtime, e *env.Env, force bool, log io.Writer) (string, *runtime.ImageInfo, bool, error) {
	tag, err := ImageTag(e)
	if err != nil {
		return "", nil, false, err
	}
	if !force {
		info, err := rt.Image(ctx, tag)
		if err != nil {
			return "", nil, false, err
		}
		if info != nil {
			return tag, info, false, nil
		}
	}
	err = rt.Build(ctx, runtime.BuildRequest{
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
