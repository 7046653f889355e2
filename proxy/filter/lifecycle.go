package filter

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"maps"
	"os"
	"sync"

	"github.com/kafkalink/kafkalink/proxy/config"
)

// Chains keeps each virtual cluster's chain across configuration reloads. A chain holds what
// its filters built up (the encryption filter's DEKs and KMS look-ups, compiled schemas), so a
// reload reuses the chain of a virtual cluster whose filters did not change, and closes the
// chains it replaces or drops once the new configuration serves.
type Chains struct {
	mu   sync.Mutex
	live map[string]*Chain // by virtual cluster name
	// watch are the files read by the live chains and by the builds that failed last time (a
	// missing token file that appears is a reason to reload too), with what they read.
	watch fileSums
}

// Plan is the chains of one configuration being applied: reused or newly built, not yet live.
// Commit makes them live, Abort drops what it built.
type Plan struct {
	owner  *Chains
	next   map[string]*Chain
	built  []*Chain
	failed fileSums // files read by builds that failed
}

// Plan starts applying a configuration.
func (cs *Chains) Plan() *Plan {
	return &Plan{owner: cs, next: map[string]*Chain{}, failed: fileSums{}}
}

// Chain is the virtual cluster's chain for this configuration: the live one when its filters'
// types, names and configs, the content of every file they read, and the limits are all the
// same; otherwise a new one. nil when the virtual cluster has no filters. A filter that cannot
// be built is an error, and the virtual cluster must then not be served.
func (p *Plan) Chain(ctx context.Context, vc string, filters []config.Filter, lim Limits) (*Chain, error) {
	if len(filters) == 0 {
		return nil, nil
	}
	p.owner.mu.Lock()
	live := p.owner.live[vc]
	p.owner.mu.Unlock()
	sum := filtersSum(filters)
	if live != nil && live.sum == sum && live.lim == lim && !live.files.changed() {
		p.next[vc] = live
		return live, nil
	}
	c, err := newChain(ctx, vc, filters, lim)
	if err != nil {
		maps.Copy(p.failed, c.files)
		return nil, err
	}
	p.next[vc] = c
	p.built = append(p.built, c)
	return c, nil
}

// Commit makes the plan's chains the live ones and returns the chains it retires (replaced or
// dropped): the caller ends the connections that use them, then closes them (CloseAll).
func (p *Plan) Commit() []*Chain {
	p.owner.mu.Lock()
	defer p.owner.mu.Unlock()
	var retired []*Chain
	for vc, c := range p.owner.live {
		if p.next[vc] != c {
			retired = append(retired, c)
		}
	}
	p.owner.live = p.next
	watch := maps.Clone(p.failed)
	for _, c := range p.next {
		maps.Copy(watch, c.files)
	}
	p.owner.watch = watch
	return retired
}

// Abort closes the chains the plan built; the live ones stay.
func (p *Plan) Abort() error { return CloseAll(p.built) }

// Changed reports whether a file the live chains read when they were built, or that the builds
// that failed read, now reads differently: the proxy then reloads (a rotated Vault token
// rebuilds the chains that read it, and only those).
func (cs *Chains) Changed() bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.watch.changed()
}

// CloseAll closes chains, joining their errors.
func CloseAll(chains []*Chain) error {
	var errs []error
	for _, c := range chains {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// filtersSum fingerprints a chain's configuration: each filter's name, type and config.
func filtersSum(filters []config.Filter) [32]byte {
	h := sha256.New()
	for _, f := range filters {
		for _, part := range [][]byte{[]byte(f.Name), []byte(f.Type), f.Config} {
			_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
			h.Write(part)
		}
	}
	return [32]byte(h.Sum(nil))
}

// fileSums are the files a chain's filters read while it was built, each with the SHA-256 of
// what the read gave (content, or the error).
type fileSums map[string][32]byte

// read is os.ReadFile, recorded.
func (fs fileSums) read(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	fs[path] = readSum(b, err)
	return b, err
}

// changed reports whether a file now reads differently from when the chain was built.
func (fs fileSums) changed() bool {
	for path, sum := range fs {
		if readSum(os.ReadFile(path)) != sum {
			return true
		}
	}
	return false
}

func readSum(b []byte, err error) [32]byte {
	if err != nil {
		return sha256.Sum256([]byte("error: " + err.Error()))
	}
	return sha256.Sum256(b)
}

// closeFilter closes a filter that holds resources.
func closeFilter(f Filter) error {
	if cl, ok := f.(Closer); ok {
		return cl.Close()
	}
	return nil
}
