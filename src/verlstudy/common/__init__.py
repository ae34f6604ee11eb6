"""Mechanisms more than one lesson really uses: detach_tree and tree walking, the allocation tracker,
local gloo ranks, and the pin parser for Dockerfiles and scripts."""
