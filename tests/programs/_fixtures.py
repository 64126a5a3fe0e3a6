"""Data and the record/replay hook shared by the programs in tests/programs/.

`words()` is a fixed list of made-up names (every letter a-z appears, at most 7 letters,
so a name plus its end token fits a block of 8), built from syllables by a small
integer hash: no file, no random generator, the same list on every machine.
`TEXT` is a short text written for these tests (the character-level GPT's corpus).

`Bridge` is what a program hands every value it draws at random (initial weights,
batches, samples). Standalone and in the harness's pure-seeding mode it returns them
unchanged; the harness substitutes a recording bridge for the PyTorch run and a
replaying one for the torchic run, so both see identical weights and batches whatever
their generators draw (tests/programs/test_programs.py).
"""

_ONSETS = ["b", "c", "d", "f", "g", "h", "j", "k", "l", "m", "n", "p", "qu", "r", "s", "t",
           "v", "w", "x", "y", "z", "br", "st", "kr", "", "sh", "th", "gl"]
_VOWELS = ["a", "e", "i", "o", "u", "y", "ai", "eo", "ia", "ou"]
_CODAS = ["", "", "", "n", "l", "r", "s", "x", "th", "m", "z", "k"]


def words(n=200):
    out, seen, k = [], set(), 0
    while len(out) < n:
        h = (k * 2654435761 + 12345) % (1 << 32)
        k += 1
        parts = []
        for _ in range(1 + h % 3):
            h = (h * 1103515245 + 12345) % (1 << 31)
            parts.append(_ONSETS[h % len(_ONSETS)] + _VOWELS[(h >> 8) % len(_VOWELS)])
        name = "".join(parts) + _CODAS[(h >> 16) % len(_CODAS)]
        if 2 <= len(name) <= 7 and name not in seen:
            seen.add(name)
            out.append(name)
    return out


TEXT = """\
The lighthouse keeper counted the waves every evening, one stroke of chalk for each grey
crest that broke against the rocks below the lamp. Nobody had asked him to do it. The
harbour office wanted only the lamp lit at dusk and put out at dawn, the lens wiped, the
log written in a clear hand. But the keeper liked numbers, and the sea gave him more of
them than anything else on the island.
In spring the counts were low and lazy, forty or fifty an hour, and the chalk marks sat
in neat rows like fence posts. In autumn they crowded the wall. He began a second wall,
then a third, and when the walls were full he moved to the floor of the lamp room, where
the marks ran in long spirals around the iron stair.
A girl from the village brought him bread on Thursdays. She asked what the marks were for
and he told her the truth: he did not know yet. She asked whether the sea would ever run
out of waves. He said he hoped not, because then he would have nothing to count, and she
laughed and said he could count the gulls instead. He tried it the next morning. The gulls
would not hold still, and he gave it up by noon.
Years passed. The keeper grew slow on the stair, and the girl grew into a woman who ran
the bakery and sent her own son up with the bread. The boy was quick with sums. He found
that the marks on the third wall repeated, not exactly but nearly, every eleven days, and
that the big storms came when two of those long swells arrived together. He wrote it down
in the back of the log, under the columns for oil and wicks.
The harbour office sent a young man to inspect the lamp. He read the log from the first
page to the last, frowning at the back pages, and then he sat on the iron stair for a long
time with the book open on his knees. When he left he took a copy of the boy's sums, and
that winter the fishing boats stayed in the harbour on two nights the old almanac had
called calm. Both nights the sea came over the breakwater.
The keeper never learned what became of the copy. He kept counting. When his eyes failed
the boy counted for him, reading the marks aloud while the old man listened to the surf
and nodded, as if the numbers and the noise were one long sentence he had almost finished.
"""


class Bridge:
    """Pass-through: a program's random draws go on unchanged (standalone runs)."""

    def params(self, name, tensors):
        """Initial weights (a list of tensors, updated in place when replayed)."""

    def module(self, name, model):
        """A module's initial state (its state_dict, loaded when replayed)."""

    def batch(self, name, *tensors):
        """Tensors drawn at random (a batch, a sample): returned, or replaced when replayed."""
        return tensors[0] if len(tensors) == 1 else tensors

    def value(self, name, v):
        """A Python number drawn at random."""
        return v
