// Fixed-size integers appended to and read from byte strings in host (little-endian) order.
#pragma once

#include <cstring>
#include <string>
#include <string_view>

namespace kjit::util {

template <typename T>
void put_int(std::string& out, T value)
{
  char bytes[sizeof(T)];
  std::memcpy(bytes, &value, sizeof(T));
  out.append(bytes, sizeof(T));
}

// The caller checks that `bytes` holds sizeof(T) bytes at `offset`.
template <typename T>
T get_int(std::string_view bytes, std::size_t offset)
{
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

} // namespace kjit::util
