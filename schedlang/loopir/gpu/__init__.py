"""Passes only GPU targets need: registers take constant indices, and blocks reduce together."""
