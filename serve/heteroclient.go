package serve

import (
	"encoding/json"
	"fmt"
	"math"

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
	return c.heteroBatch(OpNextBatch, AppendBatchRequest(nil, e, sem), info)
}

// heteroBatch sends a minibatch request (op, payload) and decodes the
// minibatch against info's schema; at the end it returns nil and end
// true.
func (c *Client) heteroBatch(op uint8, payload []byte, info *HeteroInfo) (b *HeteroBatch, end bool, err error) {
	s, err := info.Schema()
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(op, payload)
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

// HeteroSplit registers a split on a heterogeneous server
// (HeteroServer.Split): nodes, local ids of the node type at position
// nodeType of the schema, cut into batchSize pieces.
func (c *Client) HeteroSplit(nodeType int, nodes []uint32, batchSize int) (HeteroSplitInfo, error) {
	var info HeteroSplitInfo
	if nodeType < 0 || nodeType > math.MaxUint16 {
		return info, fmt.Errorf("serve: node type index %d outside u16", nodeType)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := c.roundTrip(OpSplit, AppendHeteroSplitRequest(nil, uint32(batchSize), uint16(nodeType), nodes))
	if err != nil {
		return info, err
	}
	if err := json.Unmarshal(f.Payload, &info); err != nil {
		return info, fmt.Errorf("%w: split: %v", ErrMalformed, err)
	}
	return info, nil
}

// HeteroSplitBatch asks a heterogeneous server for minibatch index of a
// split (HeteroServer.SplitBatch) and decodes it against info's schema;
// past the split's last minibatch it returns nil and end true.
func (c *Client) HeteroSplitBatch(split, index uint32, sem epoch.Semantics, info *HeteroInfo) (b *HeteroBatch, end bool, err error) {
	return c.heteroBatch(OpSplitBatch, AppendSplitBatchRequest(nil, split, index, sem), info)
}
