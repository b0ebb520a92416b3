#pragma once
// Certificates for the TLS tests, made with the openssl tool: a CA, a server certificate for
// 127.0.0.1 and localhost signed by it, a client certificate signed by it, and an unrelated CA.

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "support/process.hpp"

namespace wg::redis::test {

struct TestPki {
  wg::test::TempDir dir;
  std::string ca_cert, other_ca_cert;
  std::string server_cert, server_key;
  std::string client_cert, client_key;

  TestPki() {
    const std::string d = dir.path();
    ca_cert = make_ca("ca");
    other_ca_cert = make_ca("other-ca");
    dir.write("server.ext", "subjectAltName=IP:127.0.0.1,DNS:localhost\n");
    dir.write("client.ext", "extendedKeyUsage=clientAuth\n");
    std::tie(server_cert, server_key) = make_signed("server", "127.0.0.1", "server.ext");
    std::tie(client_cert, client_key) = make_signed("client", "wg-client", "client.ext");
  }

 private:
  static void run(const std::string& command) {
    if (std::system((command + " >/dev/null 2>&1").c_str()) != 0) {
      throw std::runtime_error("openssl failed: " + command);
    }
  }
  // EC keys: quick to make, and any TLS 1.2+ server takes them.
  static std::string new_key(const std::string& key_file) {
    return "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout " + key_file;
  }
  std::string make_ca(const std::string& name) {
    const std::string base = dir.file(name);
    run("openssl req -x509 " + new_key(base + ".key") + " -days 2 -subj /CN=wg-test-" + name +
        " -out " + base + ".pem");
    return base + ".pem";
  }
  std::pair<std::string, std::string> make_signed(const std::string& name, const std::string& cn,
                                                  const std::string& ext) {
    const std::string base = dir.file(name);
    run("openssl req " + new_key(base + ".key") + " -subj /CN=" + cn + " -out " + base + ".csr");
    run("openssl x509 -req -in " + base + ".csr -CA " + dir.file("ca.pem") + " -CAkey " +
        dir.file("ca.key") + " -CAcreateserial -days 2 -extfile " + dir.file(ext) + " -out " +
        base + ".pem");
    return {base + ".pem", base + ".key"};
  }
};

}  // namespace wg::redis::test
