// widget-gateway: a caching edge gateway for the Widget Reviews Data API.
#include <iostream>

#include "whatif/what_if.hpp"
#include "widget_gateway/common/log.hpp"
#include "widget_gateway/common/redact.hpp"
#include "widget_gateway/config/loader.hpp"
#include "widget_gateway/process/process.hpp"

extern char** environ;

int main(int argc, char** argv) {
  wg::config::Invocation invocation;
  try {
    invocation = wg::config::parse_invocation(argc, argv, environ);
  } catch (const wg::config::ConfigError& e) {
    std::cerr << "widget-gateway: " << wg::redact(e.what()) << "\n";
    return 1;
  }
  switch (invocation.action) {
    case wg::config::Action::help:
      std::cout << wg::config::usage();
      return 0;
    case wg::config::Action::version:
      std::cout << "widget-gateway " << WG_VERSION << "\n";
      return 0;
    case wg::config::Action::check_config:
      wg::log::set_level(invocation.config.log.level);
      wg::process::warn_ignored_environment(invocation);
      std::cout << wg::config::to_toml(invocation.config, wg::config::Secrets::redact);
      return 0;
    case wg::config::Action::what_if:
      return wg::whatif::run_what_if(invocation.what_if_logs, invocation.config, std::cout,
                                     std::cerr);
    case wg::config::Action::run:
      break;
  }
  try {
    return wg::process::run_gateway(invocation);
  } catch (const std::exception& e) {
    wg::log::error("startup_failed", {{"error", e.what()}});
    return 1;
  }
}
