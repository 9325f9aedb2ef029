// Encoding and checked decoding of script and dispatch-table records.
#include "store/script_record.hpp"

#include "util/bytes.hpp"
#include "util/hash.hpp"

#include <cstring>

namespace kjit::script {

namespace {

constexpr std::string_view k_script_magic = "KJITSCRP";
constexpr std::string_view k_table_magic = "KJITTABL";
constexpr std::size_t k_header = 8 + 4 + 16;

// Thrown by Reader on a short or inconsistent body; never leaves this file.
struct Bad {};

class Writer {
public:
  void u64(std::uint64_t value) { util::put_int(m_out, value); }
  void f64(double value) { util::put_int(m_out, value); }
  void str(std::string_view text)
  {
    u64(text.size());
    m_out.append(text);
  }
  void strs(const std::vector<std::string>& list)
  {
    u64(list.size());
    for (const auto& s : list) {
      str(s);
    }
  }
  std::string finish(std::string_view magic, std::uint32_t version) const
  {
    std::string out(magic);
    util::put_int(out, version);
    const util::Checksum sum = util::checksum(m_out);
    out.append(reinterpret_cast<const char*>(sum.data()), sum.size());
    return out + m_out;
  }

private:
  std::string m_out;
};

class Reader {
public:
  explicit Reader(std::string_view body) : m_body(body) {}
  std::uint64_t u64() { return take<std::uint64_t>(); }
  double f64() { return take<double>(); }
  // A count of items that each take at least `min_bytes`: bounded by what is left.
  std::size_t count(std::size_t min_bytes = 8)
  {
    const std::uint64_t n = u64();
    if (n > (m_body.size() - m_at) / min_bytes) {
      throw Bad{};
    }
    return static_cast<std::size_t>(n);
  }
  std::string str()
  {
    const std::size_t n = count(1);
    std::string s(m_body.substr(m_at, n));
    m_at += n;
    return s;
  }
  std::vector<std::string> strs()
  {
    std::vector<std::string> list(count());
    for (auto& s : list) {
      s = str();
    }
    return list;
  }
  bool done() const { return m_at == m_body.size(); }

private:
  template <typename T>
  T take()
  {
    if (m_body.size() - m_at < sizeof(T)) {
      throw Bad{};
    }
    const T value = util::get_int<T>(m_body, m_at);
    m_at += sizeof(T);
    return value;
  }
  std::string_view m_body;
  std::size_t m_at = 0;
};

// The body of a record with `magic` whose version and checksum hold.
std::optional<std::string_view> checked_body(std::string_view bytes, std::string_view magic, std::uint32_t version)
{
  if (bytes.size() < k_header || bytes.substr(0, 8) != magic || util::get_int<std::uint32_t>(bytes, 8) != version) {
    return std::nullopt;
  }
  const std::string_view body = bytes.substr(k_header);
  const util::Checksum sum = util::checksum(body);
  if (std::memcmp(sum.data(), bytes.data() + 12, sum.size()) != 0) {
    return std::nullopt;
  }
  return body;
}

void write_fingerprint(Writer& w, const Fingerprint& f)
{
  w.strs({f.kjit_version, f.arch, f.gpu, f.compute_capability, f.cuda_version});
}

Fingerprint read_fingerprint(Reader& r)
{
  const std::vector<std::string> fields = r.strs();
  if (fields.size() != 5) {
    throw Bad{};
  }
  return {fields[0], fields[1], fields[2], fields[3], fields[4]};
}

} // namespace

std::string programs_digest(const std::vector<std::pair<std::size_t, std::string>>& programs)
{
  util::Sha256Hasher digest;
  for (const auto& [index, program] : programs) {
    digest.update(std::to_string(index) + " " + program + "\n");
  }
  return util::to_hex(digest.finish());
}

std::string script_row(const std::string& hash)
{
  return std::string(k_script_prefix) + hash;
}

std::string table_row(const std::string& hash)
{
  return std::string(store::k_script_table_prefix) + hash;
}

std::string encode(const ScriptRecord& record)
{
  Writer w;
  w.strs({record.name, record.hash, record.arch, record.name_expression, record.script_txt});
  w.u64(record.space.size());
  for (const auto& parameter : record.space) {
    w.str(parameter.name);
    w.strs(parameter.values);
  }
  w.strs(record.size_names);
  w.u64(record.schedules.size());
  for (const auto& s : record.schedules) {
    std::vector<std::string> values;
    for (const auto& [name, value] : s.values) {
      values.push_back(name);
      values.push_back(value);
    }
    w.strs(values);
    w.strs({s.kernel, s.built ? "1" : "0", s.program_key, s.log});
  }
  w.u64(static_cast<std::uint64_t>(record.created_unix));
  return w.finish(k_script_magic, k_record_version);
}

std::string encode(const TableRecord& record)
{
  Writer w;
  write_fingerprint(w, record.fingerprint);
  w.u64(record.entries.size());
  for (const auto& e : record.entries) {
    w.u64(e.key.size());
    for (const std::uint64_t k : e.key) {
      w.u64(k);
    }
    w.u64(e.choice);
    w.str(e.how);
    w.u64(e.measured.size());
    for (const auto& [index, value] : e.measured) {
      w.u64(index);
      w.f64(value);
    }
    w.str(e.programs);
  }
  return w.finish(k_table_magic, k_table_version);
}

std::optional<ScriptRecord> decode_script(std::string_view bytes)
{
  const auto body = checked_body(bytes, k_script_magic, k_record_version);
  if (!body) {
    return std::nullopt;
  }
  try {
    Reader r(*body);
    ScriptRecord record;
    const std::vector<std::string> head = r.strs();
    if (head.size() != 5) {
      return std::nullopt;
    }
    record.name = head[0];
    record.hash = head[1];
    record.arch = head[2];
    record.name_expression = head[3];
    record.script_txt = head[4];
    record.space.resize(r.count());
    for (auto& parameter : record.space) {
      parameter.name = r.str();
      parameter.values = r.strs();
    }
    record.size_names = r.strs();
    record.schedules.resize(r.count());
    for (std::size_t i = 0; i < record.schedules.size(); ++i) {
      ScheduleInfo& s = record.schedules[i];
      s.index = i;
      const std::vector<std::string> values = r.strs();
      const std::vector<std::string> rest = r.strs();
      if (values.size() % 2 != 0 || rest.size() != 4) {
        return std::nullopt;
      }
      for (std::size_t v = 0; v < values.size(); v += 2) {
        s.values.emplace_back(values[v], values[v + 1]);
      }
      s.kernel = rest[0];
      s.built = rest[1] == "1";
      s.program_key = rest[2];
      s.log = rest[3];
    }
    record.created_unix = static_cast<std::int64_t>(r.u64());
    return r.done() ? std::optional(record) : std::nullopt;
  } catch (const Bad&) {
    return std::nullopt;
  }
}

std::optional<TableRecord> decode_table(std::string_view bytes)
{
  const auto body = checked_body(bytes, k_table_magic, k_table_version);
  if (!body) {
    return std::nullopt;
  }
  try {
    Reader r(*body);
    TableRecord record;
    record.fingerprint = read_fingerprint(r);
    record.entries.resize(r.count());
    for (auto& e : record.entries) {
      e.key.resize(r.count());
      for (auto& k : e.key) {
        k = r.u64();
      }
      e.choice = r.u64();
      e.how = r.str();
      e.measured.resize(r.count(16));
      for (auto& [index, value] : e.measured) {
        index = r.u64();
        value = r.f64();
      }
      e.programs = r.str();
    }
    return r.done() ? std::optional(record) : std::nullopt;
  } catch (const Bad&) {
    return std::nullopt;
  }
}

std::string script_row_problem(std::string_view key, std::string_view value)
{
  const bool table = key.substr(0, store::k_script_table_prefix.size()) == store::k_script_table_prefix;
  const std::string_view hash = key.substr(table ? store::k_script_table_prefix.size() : k_script_prefix.size());
  if (hash.size() != 64 || hash.find_first_not_of("0123456789abcdef") != std::string_view::npos) {
    return "its key names no script hash";
  }
  if (table) {
    return decode_table(value) ? "" : "the dispatch table does not decode (damaged)";
  }
  const std::optional<ScriptRecord> record = decode_script(value);
  if (!record) {
    return "the script record does not decode (damaged)";
  }
  return record->hash == hash ? "" : "the script record holds another script's hash";
}

} // namespace kjit::script
