// Command modproxy adds one version of a module, read from a directory, to
// a module proxy laid out on disk, so that the go command can fetch it with
// GOPROXY=file:///that/dir. scripts/install-check uses it to publish
// crisp's modules under a version tag without the network.
//
//	modproxy PROXYDIR MODULEPATH VERSION SRCDIR
//
// It writes PROXYDIR/<escaped path>/@v/VERSION.{info,mod,zip} and adds
// VERSION to the list file, the layout of the GOPROXY protocol
// (go help goproxy). The zip is made by golang.org/x/mod/zip, the code
// the go command uses: it leaves out nested modules, vendor directories
// and VCS directories, and checks the limits a proxy enforces.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func run(args []string, stderr io.Writer) error {
	if len(args) != 4 {
		fmt.Fprintln(stderr, "usage: modproxy PROXYDIR MODULEPATH VERSION SRCDIR")
		fmt.Fprintln(stderr, "example: modproxy /tmp/proxy github.com/crisprt/crisp v0.1.0 .")
		return errors.New("want 4 arguments")
	}
	proxy, path, version, src := args[0], args[1], args[2], args[3]
	mv := module.Version{Path: path, Version: version}
	if err := module.Check(path, version); err != nil {
		return err
	}
	esc, err := module.EscapePath(path)
	if err != nil {
		return err
	}
	escVersion, err := module.EscapeVersion(version)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, filepath.FromSlash(esc), "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, escVersion)

	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	if err := writeZip(base+".zip", mv, src); err != nil {
		return err
	}
	return addToList(filepath.Join(dir, "list"), version)
}

// writeZip writes the module zip, removing a half-written file on error.
func writeZip(name string, mv module.Version, src string) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	err = zip.CreateFromDir(f, mv, src)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(name)
		return fmt.Errorf("%s: %w", mv, err)
	}
	return nil
}

func addToList(name, version string) error {
	old, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	versions := strings.Fields(string(old))
	if !slices.Contains(versions, version) {
		versions = append(versions, version)
	}
	var b bytes.Buffer
	for _, v := range versions {
		b.WriteString(v + "\n")
	}
	return os.WriteFile(name, b.Bytes(), 0o644)
}
