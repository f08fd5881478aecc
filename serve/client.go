package serve

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"sync"

	"github.com/streamsampler/streamsampler/epoch"
	"github.com/streamsampler/streamsampler/walk"
)

// Client is a minimal Go client of the protocol, one request at a time;
// the trainer's client is the Python package. It serves tests, benchmarks
// and Go consumers.
type Client struct {
	mu  sync.Mutex
	nc  net.Conn
	id  uint32
	buf []byte
}

// Dial connects to a server: network "unix" or "tcp".
func Dial(network, addr string) (*Client, error) {
	nc, err := net.Dial(network, addr)
	if err != nil {
		return nil, err
	}
	return &Client{nc: nc}, nil
}

// DialToken connects to a server that requires a token (Config.Token)
// and presents it; a wrong token is a *RemoteError with
// CodeUnauthorized.
func DialToken(network, addr string, token []byte) (*Client, error) {
	c, err := Dial(network, addr)
	if err != nil {
		return nil, err
	}
	if err := c.Hello(token); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Hello presents token to the server: the first request on a connection
// to a server that requires one.
func (c *Client) Hello(token []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.roundTrip(OpHello, token)
	return err
}

// Close closes the connection.
func (c *Client) Close() error { return c.nc.Close() }

// roundTrip sends one request and reads its reply; an error reply is a
// *RemoteError.
func (c *Client) roundTrip(op uint8, payload []byte) (Frame, error) {
	c.id++
	id := c.id
	if _, err := c.nc.Write(AppendFrame(nil, op, StatusOK, id, payload)); err != nil {
		return Frame{}, err
	}
	f, buf, err := ReadFrame(c.nc, MaxReply, c.buf)
	c.buf = buf
	if err != nil {
		return Frame{}, err
	}
	if f.ID != id || f.Op != op {
		return Frame{}, fmt.Errorf("%w: reply op %d id %d to request op %d id %d", ErrMalformed, f.Op, f.ID, op, id)
	}
	if f.Status == StatusError {
		return f, DecodeError(f.Payload)
	}
	return f, nil
}

// EpochInfo asks for the current epoch's info.
func (c *Client) EpochInfo() (EpochInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var info EpochInfo
	f, err := c.roundTrip(OpEpochInfo, nil)
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(f.Payload, &info)
}

// Advance leaves epoch e.
func (c *Client) Advance(e uint32) (EpochInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var info EpochInfo
	f, err := c.roundTrip(OpAdvance, AppendEpochRequest(nil, e))
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(f.Payload, &info)
}

// NextBatch asks for the next minibatch of epoch e.
func (c *Client) NextBatch(e uint32) (Minibatch, error) { return c.NextBatchAs(e, DefaultSemantics) }

// NextBatchAs asks for the next minibatch of epoch e with the given
// semantics (DefaultSemantics: the server's).
func (c *Client) NextBatchAs(e uint32, sem epoch.Semantics) (Minibatch, error) {
	return c.batch(OpNextBatch, AppendBatchRequest(nil, e, sem))
}

// Split registers a node list with the server (Server.Split).
func (c *Client) Split(nodes []uint32, batchSize int) (SplitInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var info SplitInfo
	f, err := c.roundTrip(OpSplit, AppendSplitRequest(nil, uint32(batchSize), nodes))
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(f.Payload, &info)
}

// DropSplit forgets a split (Server.DropSplit).
func (c *Client) DropSplit(split uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.roundTrip(OpDropSplit, AppendDropSplitRequest(nil, split))
	return err
}

// SplitBatch asks for minibatch index of a split (Server.SplitBatch); past
// the last it answers End.
func (c *Client) SplitBatch(split, index uint32, sem epoch.Semantics) (Minibatch, error) {
	return c.batch(OpSplitBatch, AppendSplitBatchRequest(nil, split, index, sem))
}

// batch sends a request answered by a minibatch or an end marker.
func (c *Client) batch(op uint8, payload []byte) (Minibatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(op, payload)
	if err != nil {
		return Minibatch{}, err
	}
	if f.Status == StatusEnd {
		ee, err := DecodeEpochRequest(f.Payload)
		return Minibatch{Epoch: ee, End: true}, err
	}
	b, i, feat, link, err := DecodeLinkBatch(f.Payload)
	if err != nil {
		return Minibatch{}, err
	}
	return Minibatch{Epoch: b.Epoch, Index: i, Blocks: b, Features: feat, Link: link}, nil
}

// Sample assembles the blocks of seeds from epoch e.
func (c *Client) Sample(e uint32, seeds []uint32) (*epoch.Blocks, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _, err := c.sample(e, seeds)
	return b, err
}

// SampleFeatures is Sample with the features the reply carries (nil from
// a server without a feature store).
func (c *Client) SampleFeatures(e uint32, seeds []uint32) (*epoch.Blocks, *Features, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sample(e, seeds)
}

func (c *Client) sample(e uint32, seeds []uint32) (*epoch.Blocks, *Features, error) {
	f, err := c.roundTrip(OpSample, AppendSampleRequest(nil, e, seeds, DefaultSemantics))
	if err != nil {
		return nil, nil, err
	}
	b, _, feat, err := DecodeBatch(f.Payload)
	return b, feat, err
}

// Walks asks for random walks (Server.Walks): the rows, row-major, and
// the row length.
func (c *Client) Walks(starts []uint32, wc walk.Config) ([]int32, int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(OpWalks, AppendWalksRequest(nil, starts, wc))
	if err != nil {
		return nil, 0, err
	}
	d := &decoder{p: f.Payload}
	if len(f.Payload) < arrayHeaderSize+8 || f.Payload[0] != DtypeI32 || f.Payload[1] != 2 {
		return nil, 0, d.fail("walks reply: want a 2-D int32 array")
	}
	rows := binary.LittleEndian.Uint64(f.Payload[2:])
	cols := binary.LittleEndian.Uint64(f.Payload[10:])
	body := f.Payload[18:]
	if cols == 0 || rows > uint64(len(body))/4/cols || uint64(len(body)) != 4*rows*cols {
		return nil, 0, d.fail(fmt.Sprintf("walks reply: %d × %d int32 in %d bytes", rows, cols, len(body)))
	}
	out := make([]int32, rows*cols)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(body[4*i:]))
	}
	return out, int(cols), nil
}
