"""The allocator alone (no backend): property tests over random alloc/free sequences."""

import pytest
from hypothesis import given, settings, strategies as st

from torchic.allocator import Allocator, HeapFullError


def make(cap=1 << 22, arena=1 << 16, max_arena=None, small_max=1 << 12):
    arenas = []
    alloc = Allocator(arenas.append, cap, arena_bytes=arena, max_arena_bytes=max_arena,
                      align=256, small_max=small_max)
    return alloc, arenas


def assert_no_overlap(blocks):
    spans = sorted((b.arena, b.offset, b.offset + b.size) for b in blocks)
    for (a1, s1, e1), (a2, s2, e2) in zip(spans, spans[1:]):
        assert a1 != a2 or e1 <= s2, f"blocks overlap: {(a1, s1, e1)} {(a2, s2, e2)}"


ops = st.lists(st.tuples(st.booleans(), st.integers(1, 40_000), st.integers(0, 10**6)),
               max_size=120)


@settings(max_examples=300, deadline=None)
@given(ops)
def test_random_sequences_keep_invariants(sequence):
    alloc, arenas = make()
    live = []
    for do_alloc, size, pick in sequence:
        if do_alloc or not live:
            b = alloc.alloc(size)
            assert b.size >= size and b.offset % 256 == 0
            assert b.offset + b.size <= alloc.arena_sizes[b.arena]
            live.append(b)
        else:
            alloc.free(live.pop(pick % len(live)))
        assert_no_overlap(live)
        stats = alloc.stats()
        assert stats["bytes_in_use"] == sum(b.size for b in live)
        assert stats["live_blocks"] == len(live)
        assert stats["recycled_allocs"] + stats["fresh_allocs"] >= len(live)
        assert stats["peak_bytes"] >= stats["bytes_in_use"]
    # everything freed is reusable: free all, then the whole heap is one range per arena
    for b in live:
        alloc.free(b)
    alloc.stats()               # takes the freed blocks back
    alloc._flush_buckets()
    assert sorted((a, o, s) for a, o, s in alloc.free_ranges()) == \
        [(i, 0, size) for i, size in enumerate(alloc.arena_sizes)]
    assert len(arenas) == len(alloc.arena_sizes)


def test_recycling_is_lifo_and_exact():
    alloc, _ = make()
    a = alloc.alloc(1000)
    b = alloc.alloc(1000)
    alloc.free(a)
    alloc.free(b)
    c = alloc.alloc(1000)
    assert (c.arena, c.offset) == (b.arena, b.offset)      # last freed, first reused
    assert alloc.stats()["recycled_allocs"] == 1


def test_large_blocks_coalesce():
    alloc, _ = make(arena=1 << 20, small_max=1 << 12)
    blocks = [alloc.alloc(100_000) for _ in range(5)]
    for b in blocks[1:4]:
        alloc.free(b)
    merged = alloc.alloc(300_000)                           # fits only if the 3 merged
    assert merged.offset == blocks[1].offset and merged.arena == blocks[1].arena


def test_bucketed_memory_serves_other_sizes_under_pressure():
    alloc, _ = make(cap=1 << 16, arena=1 << 16)
    small = [alloc.alloc(1024) for _ in range(64)]          # fills the one arena
    for b in small:
        alloc.free(b)                                       # parked in the 1 KiB bucket
    big = alloc.alloc(32_768)                               # needs the parked memory
    assert big.size == 32_768


def test_cap_error_names_the_figures():
    alloc, _ = make(cap=1 << 16, arena=1 << 16)
    alloc.alloc(40_000)
    with pytest.raises(HeapFullError, match=r"requested 50000 bytes, 40192 bytes in use.*"
                                            r"cap of 65536"):
        alloc.alloc(50_000)


def test_max_arena_limit():
    alloc, _ = make(cap=1 << 24, arena=1 << 16, max_arena=1 << 18)
    with pytest.raises(HeapFullError, match="largest buffer"):
        alloc.alloc(1 << 19)
    b = alloc.alloc(1 << 17)                               # gets an arena of its own
    assert alloc.arena_sizes[b.arena] >= 1 << 17


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 9000), min_size=1, max_size=20), st.integers(1, 9000))
def test_freed_block_handed_straight_back_keeps_the_books(sizes, request):
    """alloc() right after frees may hand the last freed block straight back: the books
    must be the same as taking every freed block back first and then allocating."""
    results = []
    for shortcut in (True, False):
        alloc, _ = make()
        blocks = [alloc.alloc(n) for n in sizes]
        for b in blocks:
            alloc.free(b)
        if not shortcut:
            alloc.stats()            # takes every freed block back first
        got = alloc.alloc(request)
        stats = alloc.stats()
        results.append((stats["bytes_in_use"], stats["live_blocks"], stats["peak_bytes"],
                        stats["recycled_allocs"] + stats["fresh_allocs"], got.size))
        assert got.size >= request
        free = alloc.free_ranges()
        assert (got.arena, got.offset, got.size) not in free
        assert_no_overlap([got] + [type(got)(a, o, n) for a, o, n in free])
    assert results[0] == results[1]


def test_free_from_another_thread_is_taken_back_at_the_next_alloc():
    import threading
    alloc, _ = make()
    blocks = [alloc.alloc(1000) for _ in range(50)]
    t = threading.Thread(target=lambda: [alloc.free(b) for b in blocks])
    t.start()
    t.join()
    assert alloc.stats()["live_blocks"] == 0
    again = [alloc.alloc(1000) for _ in range(50)]
    assert {id(b) for b in again} == {id(b) for b in blocks}   # recycled, not carved
