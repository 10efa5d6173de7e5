// net_interface.hpp — which IPv4 address this process listens on (the bootstrap root and every rank's
// data listener), chosen as NCCL chooses its socket interface.
//
// Contract:
//   * NCCL_SOCKET_IFNAME set: the first up IPv4 interface whose name matches it, loopback included.
//     Syntax as NCCL's: a comma-separated list of name prefixes; a leading '^' excludes the listed
//     names instead; a leading '=' (after '^' if both) makes them exact names. No match is an error.
//   * Unset: the first up non-loopback IPv4 interface (so ranks in other network namespaces, i.e. an
//     emulated multi-host cluster, can reach it), else 127.0.0.1.
//   * The matching rules are pure functions (tested without touching the host's interfaces).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "status.hpp"

namespace cuda_emu::nccl {

struct InterfaceAddress {
  std::string name;
  std::uint32_t ip = 0;  // network byte order
  bool up = false;
  bool loopback = false;
};

struct IfnameFilter {
  bool exclude = false;  // '^': every interface except the listed ones
  bool exact = false;    // '=': whole names, not prefixes
  std::vector<std::string> names;
};

IfnameFilter parse_ifname_filter(std::string_view spec);
bool ifname_matches(const IfnameFilter& filter, std::string_view name);

// Index into `interfaces` of the one to use (rules above), or nullopt: with `filter` nothing matched,
// without it there is no up non-loopback interface (the caller then uses 127.0.0.1).
std::optional<std::size_t> choose_interface(const std::vector<InterfaceAddress>& interfaces,
                                            const IfnameFilter* filter);

// The host's IPv4 interfaces in getifaddrs() order.
Status list_ipv4_interfaces(std::vector<InterfaceAddress>& out);

// The address to listen on, and the interface's name (for messages), per the rules above.
Status select_listen_address(std::uint32_t& ip, std::string& interface_name);

}  // namespace cuda_emu::nccl
