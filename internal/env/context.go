package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/patternmatcher"
	"github.com/moby/patternmatcher/ignorefile"

	"github.com/chalk-rl/chalk/internal/hint"
)

// ReadIgnore reads dir's .dockerignore, or returns nil when there is none
// (or it lists nothing).
func ReadIgnore(dir string) (*patternmatcher.PatternMatcher, error) {
	p := filepath.Join(dir, IgnoreFile)
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, hint.Wrap(err, "check that "+p+" is readable")
	}
	defer f.Close()
	patterns, err := ignorefile.ReadAll(f)
	if err != nil {
		return nil, hint.Wrap(fmt.Errorf("%s: %w", p, err), "check that "+p+" is a readable text file")
	}
	if len(patterns) == 0 {
		return nil, nil
	}
	pm, err := patternmatcher.New(patterns)
	if err != nil {
		return nil, hint.Wrap(fmt.Errorf("%s: %w", p, err),
			"fix the pattern; the syntax is that of Go's filepath.Match, plus ** and a leading ! to bring files back")
	}
	return pm, nil
}

// WalkContext calls fn for every file, directory and symbolic link of the
// build context in dir that pm (dir's .dockerignore, from ReadIgnore; nil
// for none) does not exclude, as the image builder receives them; rel is
// the entry's slash-separated path below dir. The top-level names in keep
// are sent whatever pm says. Symbolic links are reported, not followed.
func WalkContext(dir string, pm *patternmatcher.PatternMatcher, keep []string, fn func(path, rel string, d fs.DirEntry) error) error {
	// parents holds the match results of each directory walked, for its
	// children.
	parents := map[string]patternmatcher.MatchInfo{}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		slashRel := filepath.ToSlash(rel)
		if pm != nil && !slices.Contains(keep, slashRel) {
			excluded, info, err := pm.MatchesUsingParentResults(slashRel, parents[filepath.ToSlash(filepath.Dir(rel))])
			if err != nil {
				return hint.Wrap(fmt.Errorf("%s: %w", filepath.Join(dir, IgnoreFile), err), "fix the pattern")
			}
			if d.IsDir() {
				parents[slashRel] = info
			}
			if excluded {
				// A later "!pattern" may bring back something below an
				// excluded directory, so walk it unless there is none.
				if d.IsDir() && !pm.Exclusions() {
					return filepath.SkipDir
				}
				return nil
			}
		}
		return fn(p, slashRel, d)
	})
}
