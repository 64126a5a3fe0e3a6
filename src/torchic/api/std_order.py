"""The orders PyTorch's CPU kernels leave equal elements in, replayed on the host.

PyTorch's unstable sort (sort / argsort with stable=False, mode) is libstdc++'s std::sort
over (value, index) pairs, and topk is its std::nth_element (then std::sort of the first k - 1)
or std::partial_sort: where a row holds ties, which index comes first is whatever these
algorithms do. `StdOrder` is those algorithms as libstdc++ writes them (introsort with a
median-of-three pivot and an unguarded partition, a final insertion sort past 16 elements,
introselect, the binary-heap routines), over Python lists, so torchic's indices are
PyTorch's. It runs only on rows that have ties (the order of distinct values is unique)
and on tensors of up to REPLAY_LIMIT elements (pure Python: about 10 us an element, so at
most ~0.2 s a call); beyond that the stable order is kept (PyTorch documents ties' order as
unspecified).
"""

REPLAY_LIMIT = 1 << 14
SORT_THRESHOLD = 16         # libstdc++'s _S_threshold


def nan_last_less(a, b):
    """PyTorch's ascending comparator: NaN is the largest."""
    return (a == a and b != b) or a < b


def nan_first_greater(a, b):
    """PyTorch's descending comparator: NaN is the largest."""
    return (a != a and b == b) or a > b


class StdOrder:
    """(value, position) pairs of one row, reordered in place as libstdc++ would."""

    def __init__(self, keys, less):
        self.items = [(k, i) for i, k in enumerate(keys)]
        self.less = less

    def positions(self, first=0, last=None):
        return [p for _, p in self.items[first:last]]

    def _lt(self, x, y):
        return self.less(x[0], y[0])

    def _swap(self, i, j):
        it = self.items
        it[i], it[j] = it[j], it[i]

    # -- introsort ------------------------------------------------------------------------
    def _partition_pivot(self, first, last):
        it, lt = self.items, self._lt
        a, b, c = first + 1, first + (last - first) // 2, last - 1
        if lt(it[a], it[b]):
            self._swap(first, b if lt(it[b], it[c]) else (c if lt(it[a], it[c]) else a))
        else:
            self._swap(first, a if lt(it[a], it[c]) else (c if lt(it[b], it[c]) else b))
        lo, hi = first + 1, last
        while True:
            while lt(it[lo], it[first]):
                lo += 1
            hi -= 1
            while lt(it[first], it[hi]):
                hi -= 1
            if not lo < hi:
                return lo
            self._swap(lo, hi)
            lo += 1

    def _insertion_sort(self, first, last):
        it, lt = self.items, self._lt
        for i in range(first + 1, last):
            val = it[i]
            if lt(val, it[first]):
                it[first + 1:i + 1] = it[first:i]
                it[first] = val
                continue
            j = i
            while lt(val, it[j - 1]):
                it[j] = it[j - 1]
                j -= 1
            it[j] = val

    def sort(self, first=0, last=None):
        """std::sort(first, last)."""
        last = len(self.items) if last is None else last
        n = last - first
        if n <= 0:
            return
        stack = [(first, last, 2 * (n.bit_length() - 1))]
        while stack:
            lo, hi, depth = stack.pop()
            while hi - lo > SORT_THRESHOLD:
                if depth == 0:
                    self._heap_select(lo, hi, hi)
                    self._sort_heap(lo, hi)
                    break
                depth -= 1
                cut = self._partition_pivot(lo, hi)
                stack.append((cut, hi, depth))
                hi = cut
        if n > SORT_THRESHOLD:
            self._insertion_sort(first, first + SORT_THRESHOLD)
            for i in range(first + SORT_THRESHOLD, last):      # unguarded linear inserts
                it, val, j = self.items, self.items[i], i
                while self._lt(val, it[j - 1]):
                    it[j] = it[j - 1]
                    j -= 1
                it[j] = val
        else:
            self._insertion_sort(first, last)

    def nth_element(self, nth, first=0, last=None):
        """std::nth_element(first, nth, last)."""
        last = len(self.items) if last is None else last
        if first == last or nth == last:
            return
        depth = 2 * ((last - first).bit_length() - 1)
        while last - first > 3:
            if depth == 0:
                self._heap_select(first, nth + 1, last)
                self._swap(first, nth)
                return
            depth -= 1
            cut = self._partition_pivot(first, last)
            if cut <= nth:
                first = cut
            else:
                last = cut
        self._insertion_sort(first, last)

    def partial_sort(self, middle, first=0, last=None):
        """std::partial_sort(first, middle, last)."""
        last = len(self.items) if last is None else last
        self._heap_select(first, middle, last)
        self._sort_heap(first, middle)

    # -- the binary heap (libstdc++'s bits/stl_heap.h) ------------------------------------------
    def _push_heap(self, first, hole, top, value):
        it = self.items
        parent = (hole - 1) // 2
        while hole > top and self._lt(it[first + parent], value):
            it[first + hole] = it[first + parent]
            hole = parent
            parent = (hole - 1) // 2
        it[first + hole] = value

    def _adjust_heap(self, first, hole, length, value):
        it, top, child = self.items, hole, hole
        while child < (length - 1) // 2:
            child = 2 * (child + 1)
            if self._lt(it[first + child], it[first + child - 1]):
                child -= 1
            it[first + hole] = it[first + child]
            hole = child
        if length % 2 == 0 and child == (length - 2) // 2:
            child = 2 * (child + 1)
            it[first + hole] = it[first + child - 1]
            hole = child - 1
        self._push_heap(first, hole, top, value)

    def _make_heap(self, first, last):
        length = last - first
        if length < 2:
            return
        parent = (length - 2) // 2
        while True:
            self._adjust_heap(first, parent, length, self.items[first + parent])
            if parent == 0:
                return
            parent -= 1

    def _pop_heap(self, first, last, result):
        it = self.items
        value = it[result]
        it[result] = it[first]
        self._adjust_heap(first, 0, last - first, value)

    def _heap_select(self, first, middle, last):
        self._make_heap(first, middle)
        for i in range(middle, last):
            if self._lt(self.items[i], self.items[first]):
                self._pop_heap(first, middle, i)

    def _sort_heap(self, first, last):
        while last - first > 1:
            last -= 1
            self._pop_heap(first, last, last)
