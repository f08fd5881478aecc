package serve

import "encoding/json"

// Scan opens a scan, a pass of layer-wise inference (OpScan): every node
// with all of its in-neighbors, r.BatchSize consecutive nodes per
// minibatch.
func (c *Client) Scan(r ScanRequest) (ScanInfo, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var info ScanInfo
	f, err := c.roundTrip(OpScan, AppendScanRequest(nil, r))
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(f.Payload, &info)
}

// ScanBatch asks for minibatch index of a scan (one hop: dst the seeds,
// src n_id); past the last it answers End.
func (c *Client) ScanBatch(scan, index uint32) (Minibatch, error) {
	return c.batch(OpScanBatch, AppendScanBatchRequest(nil, scan, index))
}

// DropScan closes a scan (OpDropScan).
func (c *Client) DropScan(scan uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.roundTrip(OpDropScan, AppendDropScanRequest(nil, scan))
	return err
}
