package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/chalk-rl/chalk/internal/hint"
)

// ProjectFile is the project config's path inside a project directory.
const ProjectFile = ".chalk/config.toml"

// Files returns the config files that apply in dir (the working directory
// when dir is ""), most specific first: the project's (FindProject), then
// the user's (UserFile). Only files that exist are listed, and the user's
// only once, even when the project's file is the very same file.
func Files(dir string) ([]string, error) {
	proj, projInfo, err := findProject(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	if proj != "" {
		files = append(files, proj)
	}
	user, err := UserFile()
	if err != nil {
		// No home directory: there is no user file to read.
		return files, nil
	}
	userInfo, err := stat(user)
	if err != nil {
		return nil, err
	}
	if userInfo != nil && (projInfo == nil || !os.SameFile(projInfo, userInfo)) {
		files = append(files, user)
	}
	return files, nil
}

// FindProject returns the nearest .chalk/config.toml at or above dir (the
// working directory when dir is ""), or "" when there is none, so that a
// command run in a project's subdirectory, or with --dir naming one, uses
// the project's settings, as git -C does.
func FindProject(dir string) (string, error) {
	p, _, err := findProject(dir)
	return p, err
}

func findProject(dir string) (string, fs.FileInfo, error) {
	if dir == "" {
		if _, err := os.Getwd(); err != nil {
			// The working directory is gone: no project, and settings
			// from the environment or the user's file still work.
			return "", nil, nil
		}
	}
	start, err := ProjectDir(dir)
	if err != nil {
		return "", nil, err
	}
	for d := start; ; d = filepath.Dir(d) {
		p := filepath.Join(d, filepath.FromSlash(ProjectFile))
		fi, err := stat(p)
		switch {
		case errors.Is(err, fs.ErrPermission) && d != start:
			// A directory above the project that is not ours to read
			// (another user's /tmp/.chalk): not our project's.
		case err != nil:
			return p, nil, err
		case fi != nil && !ownedByOther(fi):
			return p, fi, nil
		}
		// A file someone else owns is passed over: its plugins would
		// run as whoever runs chalk below it.
		if filepath.Dir(d) == d {
			return "", nil, nil
		}
	}
}

// ProjectFileToWrite is the project file that settings for dir are saved
// in: the one FindProject finds, else a new one in dir. Writing a new file
// below an existing one would hide the rest of the existing one (its
// [plugins], say) from every command run below it.
func ProjectFileToWrite(dir string) (string, error) {
	p, err := FindProject(dir)
	if p != "" || err != nil {
		return p, err
	}
	d, err := ProjectDir(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, filepath.FromSlash(ProjectFile)), nil
}

// ProjectDir makes dir (default: the working directory) absolute and
// checks that it is a directory: walking up from a mistyped --dir would
// find some other project's settings.
func ProjectDir(dir string) (string, error) {
	if dir == "" {
		dir = "."
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("find the project directory: %w", err)
	}
	fi, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		return "", hint.Newf("pass --dir the project's directory", "%s: no such directory", abs)
	}
	if err != nil {
		return "", hint.Wrap(err, "pass --dir the project's directory")
	}
	if !fi.IsDir() {
		return "", hint.Newf("pass --dir the project's directory", "%s is not a directory", abs)
	}
	return abs, nil
}

// UserFile is the user's config file, whether or not it exists:
// $XDG_CONFIG_HOME/chalk/config.toml when XDG_CONFIG_HOME is an absolute
// path, else ~/.config/chalk/config.toml. A relative XDG_CONFIG_HOME is
// ignored, as the XDG base directory specification says.
func UserFile() (string, error) {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "chalk", "config.toml"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", hint.Wrap(fmt.Errorf("find your config file: %w", err), "set HOME, or XDG_CONFIG_HOME to an absolute path")
	}
	return filepath.Join(home, ".config", "chalk", "config.toml"), nil
}

// stat returns the config file at p, or nil when there is none there. A
// directory named config.toml is not a config file.
func stat(p string) (fs.FileInfo, error) {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
		return nil, nil
	case err != nil:
		return nil, hint.Wrap(fmt.Errorf("look for a config file: %w", err), "check the permissions of "+filepath.Dir(p))
	case fi.IsDir():
		return nil, nil
	}
	return fi, nil
}
