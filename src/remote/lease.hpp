// The fleet-wide compile lease: one node compiles a key while the others wait for its upload.
#pragma once

#include <cstdint>
#include <string>

namespace kjit::remote {

class Server;

// A lease this node holds on a key (a Redis string set with NX and an expiry, whose value is a
// token unique to this lookup). Move-only. Renewed by the server's upload thread while held (a
// compile longer than the expiry keeps it), and released there on destruction, if it still holds
// the token: queued behind the SET of a record put before (RemoteTier::put). A holder that dies
// stops renewing and leaves the lease to expire (its expiry is the wait bound).
class Lease {
public:
  Lease() = default;
  Lease(Server* server, std::string key, std::string token) noexcept;
  ~Lease();
  Lease(Lease&& other) noexcept;
  Lease& operator=(Lease&& other) noexcept;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;


private:
  void release() noexcept;
  Server* m_server = nullptr;
  std::string m_key;
  std::string m_token;
};

// What asking for a lease gave.
struct LeaseAnswer {
  enum class Kind {
    held,    // this node compiles; `lease` is released after its upload
    record,  // another node's upload appeared while waiting (`bytes`, not yet verified)
    none,    // compile without a lease: server unusable, read-only, or the wait bound passed
  };
  Kind kind = Kind::none;
  Lease lease;
  std::string bytes;
  bool timed_out = false;  // none: another node held the lease for the whole wait bound
};

// Takes the lease `lease_name` on `server` (SET NX PX `wait_ms`, renewed while held: it expires
// `wait_ms` after its holder died), or, while another node holds it,
// polls for `record_name` (GET) until the record appears, the lease is free (released, or expired
// with its dead holder) or `wait_ms` passes; a lease without an expiry (no node takes one) is
// not waited for. A read-only node never takes a lease: it waits for a
// held one the same way, then compiles. Never throws; a server failure answers none. Not noexcept:
// a pthread_cancel() of the thread acts in the wait between two polls (the bound may be a day).
LeaseAnswer acquire_lease(Server& server, const std::string& record_name, const std::string& lease_name,
                          std::int64_t wait_ms);

} // namespace kjit::remote
