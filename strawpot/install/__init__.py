"""Install services: resolve the manifest into a lock, then plan, prepare and apply it to the tree."""
