#!/usr/bin/env python3
"""Derive testdata/hetero-mini (OGB's heterogeneous raw layout) from the
bundled musae-facebook page-page graph (../musae-facebook), deterministically.

Node types are the pages' page_type (company, government, politician,
tvshow), in that order; a page's local id is its rank among the pages of its
type in id order. Each undirected edge line id_1,id_2 (stored once in the
source) goes to relation (type(a), likes, type(b)) with a, b ordered so that
type(a) <= type(b) by name (and, within one type, as the line has them), so
a relation between two types holds each mutual like once; `--add-reverse`
gives the other direction. Features: per type, 16 float32 columns, the count
of the page's musae feature ids that are equal to j modulo 16 (a hashed bag
of its features); no labels (the page type is the node type).

Run from the repository root: python3 testdata/hetero-mini/make.py
Output is byte-identical on every run (gzip with mtime 0, no name).
"""
import csv
import gzip
import io
import json
import os

SRC = "testdata/musae-facebook"
OUT = "testdata/hetero-mini/raw"
DIM = 16


def write_gz(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(text.encode())
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def main():
    with gzip.open(f"{SRC}/facebook_target.csv.gz", "rt", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    ptype = {int(r["id"]): r["page_type"] for r in rows}
    types = sorted(set(ptype.values()))
    local, count = {}, {t: 0 for t in types}
    for g in sorted(ptype):
        t = ptype[g]
        local[g] = count[t]
        count[t] += 1
    write_gz(f"{OUT}/num-node-dict.csv.gz", ",".join(types) + "\n" + ",".join(str(count[t]) for t in types) + "\n")
    rels = {}
    with gzip.open(f"{SRC}/facebook_edges.csv.gz", "rt") as f:
        rd = csv.reader(f)
        next(rd)
        for a, b in rd:
            a, b = int(a), int(b)
            if ptype[a] > ptype[b]:
                a, b = b, a
            rels.setdefault((ptype[a], ptype[b]), []).append(f"{local[a]},{local[b]}")
    for (s, d), lines in sorted(rels.items()):
        write_gz(f"{OUT}/relations/{s}___likes___{d}/edge.csv.gz", "\n".join(lines) + "\n")
    with gzip.open(f"{SRC}/facebook_features.json.gz", "rt") as f:
        feats = json.load(f)
    per_type = {t: [None] * count[t] for t in types}
    for g, ids in feats.items():
        g = int(g)
        v = [0] * DIM
        for i in ids:
            v[i % DIM] += 1
        per_type[ptype[g]][local[g]] = v
    for t in types:
        lines = [",".join(str(x) for x in (v or [0] * DIM)) for v in per_type[t]]
        write_gz(f"{OUT}/node-feat/{t}/node-feat.csv.gz", "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
