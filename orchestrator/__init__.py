"""StrawPot orchestration: Denden gRPC server, WrapperRuntime, staging, delegation policy, sessions."""
