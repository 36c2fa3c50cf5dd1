// applayer/tx_queue.hpp — the transactions of a connection whose every message is a transaction
// complete when made (DNS, SIP): kept until handed out, at most a bounded number waiting.
//
// add() makes a transaction the connection's next (its id) and marks it touched; when max
// transactions wait, the oldest goes first (counted in *dropped, and taken out of the touched
// list). touched() lists the ones made since clear_touched(); release_done() drops the others
// (once handed out, nothing waits on them).
#pragma once
#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

namespace gaspp {

template <class Tx>
class TxQueue {
 public:
  explicit TxQueue(uint32_t max) : max_(max) {}
  void add(std::unique_ptr<Tx> t, uint64_t* dropped) {
    t->id = next_id_++;
    if (txs_.size() >= max_) {
      const Tx* front = txs_.front().get();
      touched_.erase(std::remove(touched_.begin(), touched_.end(), front), touched_.end());
      txs_.pop_front();
      ++*dropped;
    }
    touched_.push_back(t.get());
    txs_.push_back(std::move(t));
  }
  const std::vector<Tx*>& touched() const { return touched_; }
  void clear_touched() { touched_.clear(); }
  void release_done() {
    if (touched_.empty()) {
      txs_.clear();
      return;
    }
    std::erase_if(txs_, [&](const std::unique_ptr<Tx>& t) {
      return std::find(touched_.begin(), touched_.end(), t.get()) == touched_.end();
    });
  }
  const std::deque<std::unique_ptr<Tx>>& txs() const { return txs_; }

 private:
  uint32_t max_;
  uint64_t next_id_ = 0;
  std::deque<std::unique_ptr<Tx>> txs_;
  std::vector<Tx*> touched_;
};

}  // namespace gaspp
