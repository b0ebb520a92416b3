#include "answer_heads.hpp"

namespace wg::frontend {

namespace {

std::size_t index_of(client_policy::Coding coding) {
  return static_cast<std::size_t>(coding);
}

}  // namespace

AnswerHeads::HeadPtr AnswerHeads::find(client_policy::Coding coding, const Shape& shape) const {
  return shape == shape_ ? heads_[index_of(coding)] : nullptr;
}

std::unique_ptr<const AnswerHeads> AnswerHeads::with(client_policy::Coding coding, HeadPtr head,
                                                     const Shape& shape) const {
  auto copy = std::make_unique<AnswerHeads>(shape);
  if (shape == shape_) copy->heads_ = heads_;
  copy->heads_[index_of(coding)] = std::move(head);
  return copy;
}

std::size_t AnswerHeads::bytes() const {
  std::size_t n = sizeof(*this);
  for (const HeadPtr& head : heads_) {
    // The template and its shared_ptr control block, in one allocation (make_shared).
    if (head) n += head->bytes() + 2 * sizeof(void*);
  }
  return n;
}

}  // namespace wg::frontend
