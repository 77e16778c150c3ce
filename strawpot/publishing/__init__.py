"""Publishing: prepare a package for upload, check it locally, report what would be sent, check a wrapper."""
