#!/usr/bin/env python3
# Usage: scripts/render_screen.py RAW COLS ROWS  (needs pyte; last screen as text on stdout)
"""Replays a terminal program's raw output (ptybench.py --save) on a virtual
screen and prints the last screen as text: a screenshot without a terminal.
Needs pyte (pip install pyte). Usage: render_screen.py RAW COLS ROWS"""
import sys

import pyte


def main():
    raw, cols, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    screen = pyte.Screen(cols, rows)
    stream = pyte.ByteStream(screen)
    data = open(raw, "rb").read()
    # A program that left the alternate screen at exit has cleared it: keep
    # the last frame drawn before that.
    cut = data.rfind(b"\x1b[?1049l")
    stream.feed(data[:cut] if cut > 0 else data)
    for line in screen.display:
        print(line.rstrip())


if __name__ == "__main__":
    main()
