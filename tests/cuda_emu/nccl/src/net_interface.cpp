// net_interface.cpp — listen-address selection (net_interface.hpp).
#include "net_interface.hpp"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

namespace cuda_emu::nccl {

IfnameFilter parse_ifname_filter(std::string_view spec) {
  IfnameFilter f;
  if (!spec.empty() && spec.front() == '^') {
    f.exclude = true;
    spec.remove_prefix(1);
  }
  if (!spec.empty() && spec.front() == '=') {
    f.exact = true;
    spec.remove_prefix(1);
  }
  while (!spec.empty()) {
    const std::size_t comma = spec.find(',');
    const std::string_view item = spec.substr(0, comma);
    if (!item.empty()) f.names.emplace_back(item);
    if (comma == std::string_view::npos) break;
    spec.remove_prefix(comma + 1);
  }
  return f;
}

bool ifname_matches(const IfnameFilter& filter, std::string_view name) {
  bool listed = false;
  for (const std::string& n : filter.names) {
    if (filter.exact ? name == n : name.substr(0, n.size()) == n) {
      listed = true;
      break;
    }
  }
  return filter.exclude ? !listed : listed;
}

std::optional<std::size_t> choose_interface(const std::vector<InterfaceAddress>& interfaces,
                                            const IfnameFilter* filter) {
  for (std::size_t i = 0; i < interfaces.size(); ++i) {
    const InterfaceAddress& a = interfaces[i];
    if (!a.up) continue;
    if (filter != nullptr ? ifname_matches(*filter, a.name) : !a.loopback) return i;
  }
  return std::nullopt;
}

Status list_ipv4_interfaces(std::vector<InterfaceAddress>& out) {
  out.clear();
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return fail(ncclSystemError, cat("getifaddrs(): ", std::strerror(errno)));
  for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET) continue;
    InterfaceAddress i;
    i.name = a->ifa_name;
    i.ip = reinterpret_cast<const sockaddr_in*>(a->ifa_addr)->sin_addr.s_addr;
    i.up = (a->ifa_flags & IFF_UP) != 0;
    i.loopback = (a->ifa_flags & IFF_LOOPBACK) != 0;
    out.push_back(std::move(i));
  }
  ::freeifaddrs(list);
  return success();
}

Status select_listen_address(std::uint32_t& ip, std::string& interface_name) {
  std::vector<InterfaceAddress> interfaces;
  if (Status st = list_ipv4_interfaces(interfaces); !st.ok()) return st;
  const char* spec = std::getenv("NCCL_SOCKET_IFNAME");
  if (spec != nullptr && *spec != '\0') {
    const IfnameFilter filter = parse_ifname_filter(spec);
    const auto i = choose_interface(interfaces, &filter);
    if (!i) {
      std::string names;
      for (const InterfaceAddress& a : interfaces)
        names += cat(names.empty() ? "" : ", ", a.name, a.up ? "" : " (down)");
      return fail(ncclSystemError, cat("NCCL_SOCKET_IFNAME=", spec, " matches no up IPv4 interface (this host has: ",
                                       names.empty() ? "none" : names, ")"));
    }
    ip = interfaces[*i].ip;
    interface_name = interfaces[*i].name;
    return success();
  }
  if (const auto i = choose_interface(interfaces, nullptr)) {
    ip = interfaces[*i].ip;
    interface_name = interfaces[*i].name;
  } else {
    ip = htonl(INADDR_LOOPBACK);
    interface_name = "lo";
  }
  return success();
}

}  // namespace cuda_emu::nccl
