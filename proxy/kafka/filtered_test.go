package kafka

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"testing/iotest"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// wantAll is a Filters stand-in that wants every key and forwards frames unchanged.
type wantAll struct{ max int32 }

func (wantAll) Wants(int16) bool { return true }
func (wantAll) Request(frame []byte) ([]byte, []byte, any, error) {
	return frame, nil, nil, nil
}

func (wantAll) Response(_, _ int16, frame []byte, _ any) ([]byte, error) { return frame, nil }
func (w wantAll) MaxFrame() int32                                        { return w.max }

// announce is a request header announcing size bytes of a Produce it never sends.
func announce(size int32) []byte {
	b := make([]byte, 26)
	binary.BigEndian.PutUint32(b, uint32(size))
	binary.BigEndian.PutUint16(b[4:], 0)  // Produce
	binary.BigEndian.PutUint16(b[6:], 3)  // v3: transactional id, acks
	binary.BigEndian.PutUint16(b[12:], 0) // client id ""
	binary.BigEndian.PutUint16(b[14:], 0xffff)
	binary.BigEndian.PutUint16(b[16:], 1) // acks 1
	return b
}

// stalled reads b, then says so on reached (when set) and blocks until released.
type stalled struct {
	b                []byte
	reached, release chan struct{}
}

func (s *stalled) Read(p []byte) (int, error) {
	if len(s.b) == 0 {
		if s.reached != nil {
			s.reached <- struct{}{}
		}
		<-s.release
		return 0, io.EOF
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	return n, nil
}

// TestFilteredFrameReadAsItArrives: a client that announces a large filtered request and sends
// a few bytes holds a few bytes of the proxy's memory, not the size it announced.
func TestFilteredFrameReadAsItArrives(t *testing.T) {
	const conns, size = 20, 64 << 20
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	reached, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, conns)
	for range conns {
		go func() {
			done <- CopyRequests(&stalled{b: announce(size), reached: reached, release: release}, io.Discard, make(chan Pending, 4), RelayOptions{MaxFrame: 100 << 20, Filters: wantAll{max: 100 << 20}})
		}()
	}
	for range conns { // every relay is waiting for the rest of its frame
		<-reached
	}
	runtime.ReadMemStats(&during)
	close(release)
	for range conns {
		if err := <-done; !errors.Is(err, ErrMalformed) {
			t.Errorf("a request cut short: %v", err)
		}
	}
	if grew := during.HeapAlloc - min(during.HeapAlloc, before.HeapAlloc); grew > conns*1<<20 {
		t.Errorf("%d connections announcing %d MiB each took %d MiB of heap", conns, size>>20, grew>>20)
	}
}

// TestFilteredFrameOverLimit: a request over the filters' limit closes the connection before
// it is read.
func TestFilteredFrameOverLimit(t *testing.T) {
	release := make(chan struct{})
	close(release)
	err := CopyRequests(&stalled{b: announce(2 << 20), release: release}, io.Discard, make(chan Pending, 4), RelayOptions{MaxFrame: 100 << 20, Filters: wantAll{max: 1 << 20}})
	if !errors.Is(err, ErrMalformed) {
		t.Errorf("a 2 MiB request for filters taking 1 MiB: %v", err)
	}
}

// TestReadFrameKeepsEveryByte: frames of every size class, read in small pieces into pooled
// buffers that grow, come out whole and exact, also while other frames read after them are
// held and when the pools hand back used buffers.
func TestReadFrameKeepsEveryByte(t *testing.T) {
	for round := range 2 {
		sizes := []int{1, 64 << 10, 64<<10 + 1, 300 << 10, 1 << 20, 5<<20 + 3, 300 << 10, 2 << 20}
		wants, gots := make([][]byte, len(sizes)), make([][]byte, len(sizes))
		for i, size := range sizes {
			wants[i] = make([]byte, size)
			for j := range wants[i] {
				wants[i][j] = byte(j*7 + round + i)
			}
			got, err := readFrame(iotest.HalfReader(bytes.NewReader(wants[i])), int64(size))
			if err != nil {
				t.Fatal(err)
			}
			gots[i] = got
		}
		for i := range sizes {
			if !bytes.Equal(gots[i], wants[i]) {
				t.Fatalf("round %d, frame %d of %d bytes: changed after later frames were read", round, i, sizes[i])
			}
			PutFrame(gots[i])
		}
	}
}

// TestReadResponseAtItsSize: a filtered response is read straight into one pooled buffer of
// its size (the first read asks for all of it: growing from 64 KiB would copy a 1 MiB Fetch
// response's first 1.3 MiB again on the way), whole and exact, in small pieces too; one cut
// short is an error.
func TestReadResponseAtItsSize(t *testing.T) {
	for _, size := range []int{1, 64<<10 + 1, 1<<20 + 5000, 9 << 20} {
		want := make([]byte, size)
		for j := range want {
			want[j] = byte(j * 7)
		}
		src := &firstRead{r: iotest.HalfReader(bytes.NewReader(want))}
		got, err := readResponse(src, int64(size))
		if err != nil || !bytes.Equal(got, want) || cap(got) != FrameClass(size) || src.first != size {
			t.Fatalf("%d bytes: %v, %d bytes read into a buffer of %d (want %d), the first read asking for %d",
				size, err, len(got), cap(got), FrameClass(size), src.first)
		}
		PutFrame(got)
		if _, err := readResponse(bytes.NewReader(want[:size-1]), int64(size)); err == nil {
			t.Fatalf("%d bytes: a response cut short was read", size)
		}
	}
}

// firstRead is a reader that remembers how many bytes its first Read was asked for.
type firstRead struct {
	r     io.Reader
	first int
}

func (f *firstRead) Read(p []byte) (int, error) {
	if f.first == 0 {
		f.first = len(p)
	}
	return f.r.Read(p)
}

// TestObservedResponseOverLimit: a response over the filters' limit is relayed without them when
// they only read it (its request's state is nil: a chain learning topic ids from Metadata), and
// closes the connection when they would change it.
func TestObservedResponseOverLimit(t *testing.T) {
	frame := make([]byte, 2<<20+8)
	binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	binary.BigEndian.PutUint32(frame[4:], 5)
	for name, tc := range map[string]struct {
		state   any
		relayed bool
		closes  bool
	}{
		"a response the filters only read is relayed as it is": {state: nil, relayed: true},
		"a response the filters change closes the connection":  {state: "filtered", closes: true},
	} {
		pending := make(chan Pending, 1)
		pending <- Pending{Key: kmsg.ListOffsets.Int16(), Version: 1, CorrelationID: 5, Filtered: true, State: tc.state}
		close(pending)
		var out bytes.Buffer
		err := CopyResponses(bytes.NewReader(frame), &out, pending, RelayOptions{MaxFrame: 100 << 20, Filters: wantAll{max: 1 << 20}})
		if errors.Is(err, ErrMalformed) != tc.closes || bytes.Equal(out.Bytes(), frame) != tc.relayed {
			t.Errorf("%s: %v, relayed %v", name, err, bytes.Equal(out.Bytes(), frame))
		}
	}
}

// passResponse is a Filters stand-in whose requests need no filtered response.
type passResponse struct{ wantAll }

func (passResponse) Request(frame []byte) ([]byte, []byte, any, error) {
	return frame, nil, ResponseUnfiltered, nil
}

// TestResponseUnfiltered: a request whose filters need no response queues it unfiltered (the
// response side streams and splices it as any other), and the request is forwarded as it came.
func TestResponseUnfiltered(t *testing.T) {
	req := kmsg.NewPtrListOffsetsRequest()
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 3)
	for name, tc := range map[string]struct {
		filters  Filters
		filtered bool
	}{
		"filters that need the response": {filters: wantAll{max: 1 << 20}, filtered: true},
		"filters that do not":            {filters: passResponse{wantAll{max: 1 << 20}}, filtered: false},
	} {
		pending := make(chan Pending, 4)
		var out bytes.Buffer
		err := CopyRequests(bytes.NewReader(frame), &out, pending, RelayOptions{MaxFrame: 1 << 20, Filters: tc.filters})
		if !errors.Is(err, io.EOF) || !bytes.Equal(out.Bytes(), frame) {
			t.Errorf("%s: %v, forwarded %x", name, err, out.Bytes())
		}
		p := <-pending
		if p.Filtered != tc.filtered || p.State == ResponseUnfiltered {
			t.Errorf("%s: queued Filtered %v State %v, want Filtered %v", name, p.Filtered, p.State, tc.filtered)
		}
	}
}
