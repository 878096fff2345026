"""Seed 002's published figures (ch. 5), for scripts/evaluate_report.py to set ours beside.

Only what the seed states as numbers: Tables 5.1 and 5.2, and the ratios its text gives for the
range queries (§5.3) and the Memcached experiment (§5.5). Its figures are plots without values.
"""

ENGINE_OF = {"WORT": "wort", "WOART": "woart", "ART+CoW": "artcow", "FPTree": "fptree",
             "NVTree": "nvtree", "wB+Tree": "wbtree"}
RADIX = ["wort", "woart", "artcow"]
BTREES = ["fptree", "wbtree", "nvtree"]
DISTS = ["Dense", "Sparse", "Clustered"]

# Table 5.1: per insertion, 128M keys (Dense, Sparse, Clustered); keys stored in the node.
LLC_PER_INSERT = {"wort": (6.3, 7.2, 17.0), "woart": (5.7, 7.9, 11.2), "artcow": (5.0, 12.7, 12.9),
                  "fptree": (6.8, 6.8, 6.8), "nvtree": (35.0, 35.6, 33.6),
                  "wbtree": (22.3, 22.4, 22.4)}
FLUSHES_PER_INSERT = {"wort": (2.2, 2.4, 2.3), "woart": (2.4, 3.5, 3.7),
                      "artcow": (2.4, 3.8, 3.9), "fptree": (4.8, 4.8, 4.8),
                      "nvtree": (3.3, 3.3, 3.3), "wbtree": (6.0, 6.0, 6.0)}
# Table 5.2: per search.
LLC_PER_SEARCH = {"wort": (6.5, 7.6, 11.5), "woart": (4.8, 7.9, 8.9), "artcow": (3.8, 6.2, 8.8),
                  "fptree": (13.9, 14.1, 14.1), "nvtree": (33.5, 33.5, 33.3),
                  "wbtree": (22.9, 22.8, 23.3)}
LEAF_DEPTH = {"wort": (7.0, 7.0, 8.2), "woart": (4.0, 4.0, 4.2), "artcow": (4.0, 4.0, 4.2),
              "fptree": (3.0, 3.0, 3.0), "nvtree": (3.0, 3.0, 3.0), "wbtree": (4.0, 4.0, 4.0)}
# §5.3: radix time per range query over each B-tree's (0.001%, 0.01% of the keys).
RANGE_RADIX_OVER = {"dram": (5.8, 6.4), "fptree": (3.0, 2.8), "nvtree": (1.8, 1.8),
                    "wbtree": (4.8, 5.3)}
