// xdeep_spank_client.so: the gRPC client, packaged as the module the plugin
// dlopens on demand (its entry point lives in grpc_daemon_client.cc).
