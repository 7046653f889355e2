package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kafkalink/kafkalink/proxy/sasl"
)

// scramCredentialUsage introduces the scram-credential subcommand.
const scramCredentialUsage = `Usage: kafkalink-proxy scram-credential --user U --password-file F [--mechanism SCRAM-SHA-512] [--iterations N] [--store FILE]

Derives a salted SCRAM credential (never the password) for a SaslTermination credential store.
Without --store it prints a store holding the one user; with --store it adds the user to that
file, or replaces the user's credential of that mechanism, creating the file when missing.
`

// scramCredential runs the scram-credential subcommand.
func scramCredential(args []string, stdout, stderr io.Writer) error {
	fl := flag.NewFlagSet("scram-credential", flag.ContinueOnError)
	fl.SetOutput(stderr)
	fl.Usage = func() { fmt.Fprint(stderr, scramCredentialUsage); fl.PrintDefaults() }
	user := fl.String("user", "", "the user name")
	passwordFile := fl.String("password-file", "", "file holding the password (one trailing newline is dropped); - for standard input")
	mech := fl.String("mechanism", sasl.ScramSHA512, "SCRAM-SHA-256 or SCRAM-SHA-512")
	iterations := fl.Int("iterations", sasl.DefaultPhantomIterations, fmt.Sprintf("PBKDF2 iterations, %d..%d (keep the filter's phantomIterations the same)", sasl.MinIterations, sasl.MaxIterations))
	storePath := fl.String("store", "", "credential store file to add the user to (default: print a new store)")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *user == "" || *passwordFile == "" || fl.NArg() > 0 {
		fl.Usage()
		return errors.New("scram-credential: --user and --password-file are required, and nothing else")
	}
	password, err := readPassword(*passwordFile)
	if err != nil {
		return err
	}
	cred, err := sasl.NewScramCredential(*mech, password, sasl.NewSalt(), *iterations)
	if err != nil {
		return fmt.Errorf("scram-credential: %w", err)
	}
	store := sasl.NewCredentialStore()
	if *storePath != "" {
		if store, err = readStore(*storePath); err != nil {
			return err
		}
	}
	if err := store.Set(*user, *mech, cred); err != nil {
		return fmt.Errorf("scram-credential: %w", err)
	}
	out, err := store.Marshal()
	if err != nil {
		return err
	}
	if *storePath == "" {
		_, err = stdout.Write(out)
		return err
	}
	return writeFileAtomic(*storePath, out)
}

// readPassword reads the password file, dropping one trailing newline (an editor's or echo's).
func readPassword(path string) ([]byte, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(os.Stdin, sasl.MaxMessageBytes+1))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("scram-credential: password file: %w", err)
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if len(b) == 0 || len(b) > sasl.MaxMessageBytes {
		return nil, fmt.Errorf("scram-credential: password file: the password must be 1..%d bytes", sasl.MaxMessageBytes)
	}
	return b, nil
}

// readStore reads an existing store, or an empty one when the file does not exist.
func readStore(path string) (*sasl.CredentialStore, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return sasl.NewCredentialStore(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("scram-credential: %w", err)
	}
	s, err := sasl.ParseCredentialStore(b)
	if err != nil {
		return nil, fmt.Errorf("scram-credential: %s: %w", path, err)
	}
	return s, nil
}

// writeFileAtomic replaces path with b, readable by its owner only.
func writeFileAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("scram-credential: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("scram-credential: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("scram-credential: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
