"""The training loops every algorithm of a family shares, each written once."""
