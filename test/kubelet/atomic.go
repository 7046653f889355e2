package kubelet

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// File is one file of a volume's payload, as the kubelet's AtomicWriter takes it.
type File struct {
	Data []byte
	Mode fs.FileMode
}

// Payload maps a volume-relative slash-separated path to its file.
type Payload map[string]File

// dataDirName is the symlink that names the current timestamped folder; the kubelet uses the
// same name, and applications (and our proxy) may rely on its layout.
const (
	dataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// fingerprint summarises a payload, to skip writes that would change nothing.
func (p Payload) fingerprint() [32]byte {
	h := sha256.New()
	for _, k := range sortedPaths(p) {
		f := p[k]
		h.Write([]byte(k))
		h.Write([]byte{0})
		var b [12]byte
		binary.BigEndian.PutUint32(b[:4], uint32(f.Mode))
		binary.BigEndian.PutUint64(b[4:], uint64(len(f.Data)))
		h.Write(b[:])
		h.Write(f.Data)
	}
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out
}

func sortedPaths(p Payload) []string {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validatePath refuses paths that could escape the volume folder or collide with the
// writer's own entries. The API server validates item paths too; this check keeps a bug
// elsewhere from writing outside the work folder.
func validatePath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("path %q is absolute", p)
	case strings.HasPrefix(p, ".."):
		return fmt.Errorf("path %q starts with '..'", p)
	case path.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fmt.Errorf("path %q contains '..'", p)
		}
	}
	return nil
}

// WriteAtomic lays out payload in dir the way the kubelet's AtomicWriter does, so a reader
// never sees a half-written update:
//
//	dir/..2006_01_02_15_04_05.NNN/<path>   the files of this version
//	dir/..data -> ..2006_01_02_15_04_05.NNN  swapped by rename(2), which is atomic
//	dir/<first path element> -> ..data/<first path element>
//
// Old versions and user-visible links that are no longer in the payload are removed after
// the swap. Every file keeps at least owner read, because the local process runs as the
// folder's owner where a pod would rely on fsGroup.
func WriteAtomic(dir string, payload Payload) error {
	for p := range payload {
		if err := validatePath(p); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	oldTarget, err := os.Readlink(filepath.Join(dir, dataDirName))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return err
	}
	swapped := false
	defer func() {
		if !swapped {
			_ = os.RemoveAll(tsDir)
		}
	}()
	if err := os.Chmod(tsDir, 0o755); err != nil {
		return err
	}
	for _, p := range sortedPaths(payload) {
		f := payload[p]
		full := filepath.Join(tsDir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		mode := f.Mode.Perm() | 0o400
		if err := os.WriteFile(full, f.Data, mode); err != nil {
			return err
		}
		// WriteFile's mode is filtered by the umask; a volume file has exactly its mode.
		if err := os.Chmod(full, mode); err != nil {
			return err
		}
	}
	tmpLink := filepath.Join(dir, newDataDirName)
	_ = os.Remove(tmpLink)
	if err := os.Symlink(filepath.Base(tsDir), tmpLink); err != nil {
		return err
	}
	if err := os.Rename(tmpLink, filepath.Join(dir, dataDirName)); err != nil {
		return err
	}
	swapped = true

	visible := map[string]bool{}
	for p := range payload {
		visible[strings.SplitN(p, "/", 2)[0]] = true
	}
	for name := range visible {
		link := filepath.Join(dir, name)
		want := filepath.Join(dataDirName, name)
		if got, err := os.Readlink(link); err == nil && got == want {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(want, link); err != nil {
			return err
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, "..") || visible[name] {
			continue
		}
		// Only links the writer made are removed; anything else in the folder is not ours.
		if e.Type()&fs.ModeSymlink != 0 {
			if target, err := os.Readlink(filepath.Join(dir, name)); err == nil && strings.HasPrefix(target, dataDirName+"/") {
				_ = os.Remove(filepath.Join(dir, name))
			}
		}
	}
	if oldTarget != "" && oldTarget != filepath.Base(tsDir) && strings.HasPrefix(oldTarget, "..") && !strings.Contains(oldTarget, "/") {
		if err := os.RemoveAll(filepath.Join(dir, oldTarget)); err != nil {
			return err
		}
	}
	return nil
}
