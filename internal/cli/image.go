package cli

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chalk-rl/chalk/internal/env"
	"github.com/chalk-rl/chalk/internal/hint"
)

func (a *app) imageCommand() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "image",
		Short: "Build images on the Chalk API server for your containers",
		Args:  groupArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "project directory whose .chalk/config.toml to use")
	var name, file string
	build := &cobra.Command{
		Use:   "build --name NAME [--file Dockerfile] CONTEXT",
		Short: "Build a Dockerfile on the server; run it with 'chalk container run --image NAME'",
		Long: `Upload the build context CONTEXT (a directory; .dockerignore is honoured) and
build it on the server as your image NAME. The build log streams to
stderr. Containers have no outbound internet, but builds do whatever the
server's own engine can: on a server with no registry, start FROM images
it already has.`,
		Args: nArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if name == "" {
				return &usageError{err: errors.New("--name is required"), help: "chalk image build --name dev-box ."}
			}
			ctxDir, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			if fi, err := os.Stat(ctxDir); err != nil || !fi.IsDir() {
				return hint.Newf("pass the directory that holds the Dockerfile", "build context %s is not a directory", args[0])
			}
			df := file
			if df == "" {
				df = "Dockerfile"
				if _, err := os.Stat(filepath.Join(ctxDir, df)); err != nil {
					if _, err2 := os.Stat(filepath.Join(ctxDir, "Containerfile")); err2 == nil {
						df = "Containerfile"
					}
				}
			}
			if _, err := os.Stat(filepath.Join(ctxDir, df)); err != nil {
				return hint.Newf("write a Dockerfile there, or name it with --file", "no %s in %s", df, ctxDir)
			}
			c, err := a.apiClient(dir)
			if err != nil {
				return err
			}
			pr, pw := io.Pipe()
			go func() { pw.CloseWithError(tarContext(ctxDir, pw)) }()
			if err := c.BuildImage(cmd.Context(), name, filepath.ToSlash(df), pr, a.stderr); err != nil {
				pr.CloseWithError(err)
				return hint.Wrap(err, "read the build log above")
			}
			fmt.Fprintln(a.stdout, name)
			return nil
		},
	}
	build.Flags().StringVar(&name, "name", "", "the image's name, e.g. dev-box or dev-box:v2 (required)")
	build.Flags().StringVarP(&file, "file", "f", "", "the Dockerfile, relative to CONTEXT (default Dockerfile, else Containerfile)")
	ls := &cobra.Command{
		Use:   "ls",
		Short: "List the images you built",
		Args:  maxArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.apiClient(dir)
			if err != nil {
				return err
			}
			ims, err := c.Images(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBUILT")
			for _, im := range ims {
				fmt.Fprintf(tw, "%s\t%s\n", im.Name, im.CreatedAt.Local().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	cmd.AddCommand(build, ls)
	return cmd
}

// tarContext writes dir as a tar stream, leaving out what .dockerignore
// excludes. Symlinks are archived as links, never followed.
func tarContext(dir string, w io.Writer) error {
	pm, err := env.ReadIgnore(dir)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	err = env.WalkContext(dir, pm, []string{"Dockerfile", env.IgnoreFile}, func(p, rel string, d fs.DirEntry) error {
		fi, err := d.Info()
		if err != nil {
			return err
		}
		link := ""
		if fi.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(fi, link)
		if err != nil {
			return err
		}
		hdr.Name = rel
		if d.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
