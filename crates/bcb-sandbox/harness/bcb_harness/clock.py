"""The frozen clock: seconds the current sample has spent frozen, shared with it (an
anonymous MAP_SHARED page made before the first fork): its alarm extends itself by what it
finds here. Written by the supervisor only; a sample that overwrites it only moves its own
alarm, never the supervisor's deadline."""

_page = None


def frozen_clock_create():
    """Makes the shared page (a slot does, before it forks its first sample)."""
    global _page
    import mmap

    _page = mmap.mmap(-1, 8)


def frozen_clock():
    """The shared page (None before `frozen_clock_create`)."""
    return _page


def frozen_clock_read(clock):
    import struct

    return struct.unpack("d", clock[:8])[0] if clock is not None else 0.0


def frozen_clock_write(secs):
    import struct

    if _page is not None:
        _page[:8] = struct.pack("d", secs)
