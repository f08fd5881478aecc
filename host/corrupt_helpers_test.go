package host

// corruptGraphCSR is the graph of the corruption matrix: a few thousand
// nodes of skewed degree and one hub whose list fills most of a chunk, so
// that the chunk before it ends with a fill larger than a page (bytes
// that no read touches).
func corruptGraphCSR() *CSR {
	g := randomCSR(3000, 8, 5)
	const hub, deg = 1500, 3000
	c := &CSR{Indptr: make([]uint64, len(g.Indptr))}
	for v := uint32(0); v < g.NumNodes(); v++ {
		nb, _ := g.Neighbors(v)
		if v == hub {
			nb = make([]uint32, deg)
			for i := range nb {
				nb[i] = uint32(i)
			}
		}
		c.Indices = append(c.Indices, nb...)
		c.Indptr[v+1] = uint64(len(c.Indices))
	}
	return c
}
