package serve

import (
	"encoding/json"
	"fmt"

	"github.com/streamsampler/streamsampler/epoch"
)

// HeteroEpochInfo asks a heterogeneous server for the current epoch's
// info, its schema included.
func (c *Client) HeteroEpochInfo() (HeteroEpochInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var info HeteroEpochInfo
	f, err := c.roundTrip(OpEpochInfo, nil)
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(f.Payload, &info); err != nil {
		return info, fmt.Errorf("%w: epoch_info: %v", ErrMalformed, err)
	}
	return info, nil
}

// NextHeteroBatch asks a heterogeneous server for the next minibatch of
// epoch e with the given semantics (DefaultSemantics: the server's) and
// decodes it against info's schema. At the epoch's end it returns nil and
// end true.
func (c *Client) NextHeteroBatch(e uint32, sem epoch.Semantics, info *HeteroInfo) (b *HeteroBatch, end bool, err error) {
	s, err := info.Schema()
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(OpNextBatch, AppendBatchRequest(nil, e, sem))
	if err != nil {
		return nil, false, err
	}
	if f.Status == StatusEnd {
		return nil, true, nil
	}
	if !IsHeteroBatch(f.Payload) {
		return nil, false, fmt.Errorf("%w: a homogeneous minibatch from a server that sent a heterogeneous schema", ErrMalformed)
	}
	b, err = DecodeHeteroBatch(f.Payload, s)
	return b, false, err
}
