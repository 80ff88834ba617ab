"""Small example systems for `--system`: a Python plug-in and an HTTP service speaking the contract."""
