#pragma once
// The running gateway: wires the components together, runs the io threads, and handles
// signals (SIGHUP reload, SIGTERM/SIGINT drain and exit).

#include "widget_gateway/config/loader.hpp"

namespace wg::process {

// Runs until SIGTERM/SIGINT; returns the process exit code. Throws std::exception for
// start-up failures (address in use, bad CA file...).
int run_gateway(const config::Invocation& invocation);

// The start-up warning (event environment_ignored) about WG_* variables the gateway does not
// read, naming those it does. Names only: a value may be a secret.
void warn_ignored_environment(const config::Invocation& invocation);

}  // namespace wg::process
