package kafka

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// A filtered Fetch response is streamed too, partition by partition: each partition is read
// (bounded by the filters' frame limit, as a whole response is otherwise), filtered, and written
// before the next one is read, so the broker-to-proxy transfer, the filters' work and the
// proxy-to-client transfer overlap, and the proxy holds one partition, not the response. The
// frame size goes out first, before any partition has been filtered: it is the broker's plus
// fetchSlack. Filters that shrink partitions (decryption does) and the slack they do not use
// are made up by the padding tag at the end (PaddingTag); a partition that would grow past the
// room left is cut after its last whole record batch that fits, which clients read as a
// response that reached its size limit (they fetch the rest next).

// PartitionFilter filters one partition of a Fetch response, given as a Fetch response frame of
// its own (size included) with one topic and that partition (OnePartitionFetch's layout). It
// returns the frame the filters made of it, for the same topic, and a release function (or nil)
// that gives the returned frame's buffer back once it is written.
type PartitionFilter func(frame []byte) (out []byte, release func(), err error)

// FetchStreamer is implemented by Filters that can filter a Fetch response one partition at a
// time.
type FetchStreamer interface {
	// FetchPartitions returns the partition filter for the response to a request that went
	// through Request with state, or nil when the response must be filtered whole.
	FetchPartitions(version int16, state any) PartitionFilter
}

// minPadding is the smallest padding a tagged section can take: a padding tag's key (2 bytes)
// and its empty length.
const minPadding = 3

// fetchSlack is how much larger than the broker's a filtered Fetch response is announced: the
// room its filters have to make partitions larger (a re-compressed batch may grow).
func fetchSlack(total int64) int64 { return minPadding + total/128 }

// fetchStream is one filtered Fetch response on its way from the broker to the client.
type fetchStream struct {
	w       *walker // copies what it walks to the client, except while capturing
	version int16
	corr    int32
	filter  PartitionFilter
	topic   []byte // the current topic's key
	// inFlight are the current topic's partitions being filtered, oldest first: up to
	// GOMAXPROCS at once, so that a response's partitions use the cores as they did when it
	// was filtered whole.
	inFlight []*partitionJob
	room     int64 // how many bytes the rest may grow and still leave room for padding
}

// partitionJob is one partition being filtered.
type partitionJob struct {
	frame   []byte // the one-partition response, a pooled buffer
	inLen   int64  // the partition's length as the broker sent it
	out     []byte
	release func()
	err     error
	done    chan struct{}
}

// streamed is what streaming one filtered Fetch response did: the addresses it rewrote, whether
// it dropped NodeEndpoints, and the padding it sent.
type streamed struct {
	rewrote int
	dropped bool
	padding int64
}

// streamFilteredFetch streams one Fetch response frame of version 12 or later (total bytes, size
// included) from mv.src to mv.dst through filter, rewriting v16+ NodeEndpoints with m as
// streamFetch does.
func streamFilteredFetch(mv mover, version int16, total int64, m AddressMap, filter PartitionFilter) (streamed, error) {
	if version < 12 || version > MaxVersion(kmsg.Fetch.Int16()) || total < 8 {
		return streamed{}, malformed("a filtered Fetch stream needs a flexible Fetch version, got v%d", version)
	}
	slack := fetchSlack(total)
	hdr := make([]byte, 8)
	if _, err := io.ReadFull(mv.src, hdr); err != nil {
		return streamed{}, err
	}
	binary.BigEndian.PutUint32(hdr, uint32(total-4+slack))
	if _, err := mv.dst.Write(hdr); err != nil {
		return streamed{}, err
	}
	s := &fetchStream{w: &walker{mv: mover{src: mv.src, dst: mv.dst}, left: total - 8}, version: version, filter: filter, room: slack - minPadding,
		corr: int32(binary.BigEndian.Uint32(hdr[4:]))}
	defer s.abandon()
	skipTagSection(s.w) // response header
	s.w.advance(4 + 2 + 4)
	array(s.w, s.nextTopic)
	if s.w.err != nil {
		return streamed{}, s.w.err
	}
	n, dropped, err := s.finish(m)
	return streamed{rewrote: n, dropped: dropped, padding: s.room + minPadding}, err
}

// nextTopic streams one topic: its key as it is, each partition filtered.
func (s *fetchStream) nextTopic() {
	key := make([]byte, 0, 64) // a topic name is usually short, an id 16 bytes
	s.capture(&key, func() { walkTopicKey(s.w, s.version) })
	s.topic = key
	s.write(s.topic)
	array(s.w, s.nextPartition)
	for len(s.inFlight) > 0 {
		s.writeOldest()
	}
	skipTagSection(s.w)
}

// nextPartition reads one partition whole into a response of its own and starts filtering it;
// the oldest partition in flight is written first when the cores are all busy.
func (s *fetchStream) nextPartition() {
	if len(s.inFlight) >= runtime.GOMAXPROCS(0) {
		s.writeOldest()
	}
	j := &partitionJob{frame: appendOnePartitionHead(GetFrame(passChunk), s.corr, s.topic), done: make(chan struct{})}
	head := len(j.frame)
	s.capture(&j.frame, func() { walkPartition(s.w) })
	s.inFlight = append(s.inFlight, j)
	if s.w.err != nil {
		close(j.done)
		return
	}
	j.inLen = int64(len(j.frame) - head)
	j.frame = endOnePartition(j.frame)
	go s.run(j)
}

// run filters one partition. A panic (a dependency's bug on hostile bytes) fails the stream,
// whose connection then ends, rather than the process.
func (s *fetchStream) run(j *partitionJob) {
	defer close(j.done)
	defer func() {
		if r := recover(); r != nil {
			j.err = fmt.Errorf("filtering a streamed Fetch partition: %v", r)
		}
	}()
	j.out, j.release, j.err = s.filter(j.frame)
}

// writeOldest waits for the oldest partition in flight and writes what the filters made of it,
// cut to the room left.
func (s *fetchStream) writeOldest() {
	j := s.inFlight[0]
	s.inFlight = s.inFlight[1:]
	<-j.done
	defer j.free()
	if s.w.err != nil {
		return
	}
	var b []byte
	err := j.err
	if err == nil {
		b, err = s.filteredPartition(j.out)
	}
	if err == nil && int64(len(b))-j.inLen > s.room {
		b, err = cutPartition(b, j.inLen+s.room)
	}
	if err != nil {
		s.w.fail(err)
		return
	}
	s.room -= int64(len(b)) - j.inLen
	s.write(b)
}

// free gives a finished job's buffers back.
func (j *partitionJob) free() {
	if j.release != nil {
		j.release()
	}
	PutFrame(j.frame)
}

// abandon waits for the partitions still in flight when the stream failed, and frees them.
func (s *fetchStream) abandon() {
	for _, j := range s.inFlight {
		<-j.done
		j.free()
	}
	s.inFlight = nil
}

// filteredPartition is the partition of a filtered one-partition response, which must still be
// the topic's.
func (s *fetchStream) filteredPartition(out []byte) ([]byte, error) {
	topic, part, err := PartitionOf(out, s.version)
	if err == nil && !bytes.Equal(topic, s.topic) {
		err = malformed("the filters changed the topic of a streamed Fetch partition")
	}
	return part, err
}

// capture walks a part of the response onto the end of *buf instead of to the client.
func (s *fetchStream) capture(buf *[]byte, walk func()) {
	client := s.w.mv.dst
	s.w.mv.dst = (*frameWriter)(buf)
	walk()
	s.w.mv.dst = client
}

// frameWriter appends to a frame (pooled or nil), moving to a larger pooled class when it is full.
type frameWriter []byte

func (f *frameWriter) Write(b []byte) (int, error) {
	f.grow(len(b))
	*f = append(*f, b...)
	return len(b), nil
}

// readFrom appends exactly n bytes read from src (io.EOF when it ends first), straight into the
// frame: a record set is copied once, from the connection. The walker has checked n against
// what is left of a frame the filters take.
func (f *frameWriter) readFrom(src *bufio.Reader, n int64) error {
	f.growTo(len(*f) + int(n) + frameTail)
	start := len(*f)
	*f = (*f)[:start+int(n)]
	if _, err := io.ReadFull(src, (*f)[start:]); err != nil {
		*f = (*f)[:start]
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return err
	}
	return nil
}

// grow makes room for n more bytes, moving to a pooled class at least twice the size needed.
func (f *frameWriter) grow(n int) {
	if len(*f)+n > cap(*f) {
		f.growTo(2 * (len(*f) + n))
	}
}

// frameTail is room for what follows a partition's records in its frame (the partition's,
// topic's and response's tagged fields, usually a byte each), so that they are not what moves
// the frame to a class twice its size.
const frameTail = 64

// growTo makes room for size bytes in all, moving to the smallest pooled class that holds them:
// a partition's records are read with their length known, and a class twice their size would
// be zeroed for nothing whenever the pool has none at hand.
func (f *frameWriter) growTo(size int) {
	if size > cap(*f) {
		grown := append(GetFrame(size), *f...)
		PutFrame(*f)
		*f = grown
	}
}

func (s *fetchStream) write(b []byte) {
	if s.w.err != nil {
		return
	}
	if _, err := s.w.mv.dst.Write(b); err != nil {
		s.w.fail(err)
	}
}

// finish writes the top-level tagged section, rewritten and padded to the announced size.
func (s *fetchStream) finish(m AddressMap) (int, bool, error) {
	if s.w.left > 1<<20 {
		return 0, false, malformed("%d bytes of top-level tagged fields", s.w.left)
	}
	tail := make([]byte, s.w.left)
	if _, err := io.ReadFull(s.w.mv.src, tail); err != nil {
		return 0, false, err
	}
	size := len(tail) + int(s.room) + minPadding
	if s.version < 16 {
		m = nil // no NodeEndpoints before v16: tag 0 is not theirs
	}
	out, n, dropped, err := padTagSection(tail, m, size)
	if err != nil {
		return 0, false, err
	}
	_, err = s.w.mv.dst.Write(out)
	return n, dropped, err
}

// padTagSection is rewriteTagSection, or without m the section as it is, padded to size.
func padTagSection(section []byte, m AddressMap, size int) ([]byte, int, bool, error) {
	if m != nil {
		return rewriteTagSection(section, m, size)
	}
	tags, err := parseTags(section)
	if err != nil {
		return nil, 0, false, err
	}
	out, ok := padTo(tags, size)
	if !ok {
		return nil, 0, false, malformed("cannot pad a Fetch response's tagged fields from %d to %d bytes", len(section), size)
	}
	return out, 0, false, nil
}

// cutPartition shortens an encoded Fetch partition to at most limit bytes by dropping record
// batches from its end, as a broker does when a response reaches its size limit.
func cutPartition(part []byte, limit int64) ([]byte, error) {
	c := &sliceCursor{b: part}
	c.advance(4 + 2 + 8 + 8 + 8)
	array(c, func() {
		c.advance(16)
		skipTagSection(c)
	})
	c.advance(4)
	head := c.off
	l := c.uvarint()
	if c.err != nil || l == 0 || l-1 > uint64(c.remaining()) {
		return nil, malformed("a filtered Fetch partition of %d bytes does not fit in %d", len(part), limit)
	}
	records := part[c.off : c.off+int(l-1)]
	tags := part[c.off+int(l-1):]
	keep := 0
	for keep+12 <= len(records) {
		n := 12 + int(int32(binary.BigEndian.Uint32(records[keep+8:])))
		fits := int64(head+uvarintLen(uint64(keep+n+1))+keep+n+len(tags)) <= limit
		if n < 12 || keep+n > len(records) || !fits {
			break
		}
		keep += n
	}
	out := append(slices.Clip(part[:head]), binary.AppendUvarint(nil, uint64(keep+1))...)
	out = append(append(out, records[:keep]...), tags...)
	if int64(len(out)) > limit {
		return nil, malformed("a filtered Fetch partition of %d bytes does not fit in %d", len(part), limit)
	}
	return out, nil
}

// OnePartitionFetch is a Fetch response frame (size included) of one topic with one partition,
// the frames a PartitionFilter is given.
func OnePartitionFetch(correlationID int32, topic, partition []byte) []byte {
	b := appendOnePartitionHead(make([]byte, 0, 20+len(topic)+len(partition)+2), correlationID, topic)
	return endOnePartition(append(b, partition...))
}

// appendOnePartitionHead appends the bytes of a one-partition Fetch response before the
// partition: a size to be set by endOnePartition, the correlation id, the body up to the topic,
// the topic's key and a partition count of one.
func appendOnePartitionHead(b []byte, correlationID int32, topic []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(correlationID))
	b = append(b, 0)                      // response header tags
	b = append(b, make([]byte, 4+2+4)...) // throttle, error code, session id
	b = append(b, 2)                      // one topic
	return append(append(b, topic...), 2) // its key, one partition
}

// endOnePartition appends the tags that follow the partition and sets the size.
func endOnePartition(b []byte) []byte {
	b = append(b, 0, 0) // the topic's and the response's tags
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// PartitionOf returns the topic key and the one partition of a frame like OnePartitionFetch's
// (size included), as a filter re-encoded it.
func PartitionOf(frame []byte, version int16) (topic, partition []byte, err error) {
	c := &sliceCursor{b: frame}
	c.advance(8)
	skipTagSection(c)
	c.advance(4 + 2 + 4)
	if n := c.uvarint(); n != 2 && c.err == nil {
		return nil, nil, malformed("a filtered one-partition Fetch with %d topics", int64(n)-1)
	}
	start := c.off
	walkTopicKey(c, version)
	topicEnd := c.off
	if n := c.uvarint(); n != 2 && c.err == nil {
		return nil, nil, malformed("a filtered one-partition Fetch with %d partitions", int64(n)-1)
	}
	partStart := c.off
	walkPartition(c)
	partEnd := c.off
	skipTagSection(c)
	if c.err != nil {
		return nil, nil, c.err
	}
	return frame[start:topicEnd], frame[partStart:partEnd], nil
}

// CheckFetchResponse walks a whole Fetch response frame of version 12 or later (size included),
// checking every count and length, the tagged fields' included, against the bytes left: one that
// passes can be decoded by kmsg without its tagged-field loop running past the end (decode.go).
func CheckFetchResponse(frame []byte, version int16) error {
	if version < 12 || version > MaxVersion(kmsg.Fetch.Int16()) {
		return malformed("not a flexible Fetch version: v%d", version)
	}
	c := &sliceCursor{b: frame}
	c.advance(8)
	skipTagSection(c)
	walkFetchBody(c, version)
	skipTagSection(c)
	if c.err == nil && c.remaining() != 0 {
		c.fail(malformed("%d bytes after a Fetch response", c.remaining()))
	}
	return c.err
}
