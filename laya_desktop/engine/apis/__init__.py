"""One adapter per client API: its body in as a `Call`, the shared outputs out in its own format."""
