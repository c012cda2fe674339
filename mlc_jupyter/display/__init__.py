"""Results -> rich output: HTML with inline styles plus a text/plain fallback."""
