"""``tinyagent doctor``: placeholder."""
