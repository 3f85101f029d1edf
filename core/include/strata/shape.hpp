#pragma once
// Shape: a tensor's sizes or strides, in elements. A small vector whose first
// kMaxDims (8) entries live inside the object, so making a view (narrow,
// transpose, reshape, expand...) copies a few words instead of allocating two
// heap blocks: a small op's front end makes several views, and heap traffic
// was a third of a small model's host time per op (docs/log/models.md). Longer
// shapes (a file header naming 9 dims, say) still work, on the heap.
//
// It offers the part of std::vector<std::int64_t> the code base uses, with
// plain pointers as iterators, and converts from a std::vector.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <iterator>
#include <new>
#include <type_traits>
#include <vector>

namespace strata {

class Shape {
 public:
  using value_type = std::int64_t;
  using size_type = std::size_t;
  using difference_type = std::ptrdiff_t;
  using reference = std::int64_t&;
  using const_reference = const std::int64_t&;
  using pointer = std::int64_t*;
  using const_pointer = const std::int64_t*;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;
  static constexpr std::size_t kInline = 8;

  Shape() noexcept = default;
  Shape(std::initializer_list<std::int64_t> v) { assign(v.begin(), v.end()); }
  explicit Shape(std::size_t n, std::int64_t value = 0) { assign(n, value); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  Shape(It first, It last) {
    assign(first, last);
  }
  Shape(const std::vector<std::int64_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit
  Shape(const Shape& o) { copy_from(o); }
  Shape(Shape&& o) noexcept { take(o); }
  Shape& operator=(const Shape& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  Shape& operator=(Shape&& o) noexcept {
    if (this != &o) {
      release();
      take(o);
    }
    return *this;
  }
  Shape& operator=(std::initializer_list<std::int64_t> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  ~Shape() { release(); }

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  std::size_t capacity() const noexcept { return cap_; }
  std::int64_t* data() noexcept { return p_; }
  const std::int64_t* data() const noexcept { return p_; }
  iterator begin() noexcept { return p_; }
  iterator end() noexcept { return p_ + size_; }
  const_iterator begin() const noexcept { return p_; }
  const_iterator end() const noexcept { return p_ + size_; }
  const_iterator cbegin() const noexcept { return p_; }
  const_iterator cend() const noexcept { return p_ + size_; }
  reverse_iterator rbegin() noexcept { return reverse_iterator(end()); }
  reverse_iterator rend() noexcept { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const noexcept { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const noexcept { return const_reverse_iterator(begin()); }
  std::int64_t& operator[](std::size_t i) noexcept { return p_[i]; }
  const std::int64_t& operator[](std::size_t i) const noexcept { return p_[i]; }
  std::int64_t& front() noexcept { return p_[0]; }
  const std::int64_t& front() const noexcept { return p_[0]; }
  std::int64_t& back() noexcept { return p_[size_ - 1]; }
  const std::int64_t& back() const noexcept { return p_[size_ - 1]; }

  void reserve(std::size_t n) {
    if (n > cap_) grow(n);
  }
  void clear() noexcept { size_ = 0; }
  void push_back(std::int64_t v) {
    if (size_ == cap_) grow(cap_ * 2);
    p_[size_++] = v;
  }
  template <class... A>
  std::int64_t& emplace_back(A... a) {
    push_back(std::int64_t(a...));
    return back();
  }
  void pop_back() noexcept { --size_; }
  void resize(std::size_t n, std::int64_t value = 0) {
    reserve(n);
    for (std::size_t i = size_; i < n; ++i) p_[i] = value;
    size_ = n;
  }
  void assign(std::size_t n, std::int64_t value) {
    size_ = 0;
    resize(n, value);
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  void assign(It first, It last) {
    const auto n = static_cast<std::size_t>(std::distance(first, last));
    if (n > kInline) {  // copy first: [first, last) may lie inside *this
      Shape tmp;
      tmp.grow(n);
      std::copy(first, last, tmp.p_);
      tmp.size_ = n;
      *this = std::move(tmp);
      return;
    }
    std::int64_t buf[kInline];  // through a buffer, in case the source overlaps
    std::copy(first, last, buf);
    std::copy(buf, buf + n, p_);
    size_ = n;
  }
  iterator insert(const_iterator pos, std::int64_t v) { return insert(pos, std::size_t{1}, v); }
  iterator insert(const_iterator pos, std::size_t count, std::int64_t v) {
    const std::size_t at = static_cast<std::size_t>(pos - p_);
    reserve(size_ + count);
    std::move_backward(p_ + at, p_ + size_, p_ + size_ + count);
    std::fill(p_ + at, p_ + at + count, v);
    size_ += count;
    return p_ + at;
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  iterator insert(const_iterator pos, It first, It last) {
    const std::size_t at = static_cast<std::size_t>(pos - p_);
    const Shape src(first, last);  // the source may lie inside *this
    reserve(size_ + src.size());
    std::move_backward(p_ + at, p_ + size_, p_ + size_ + src.size());
    std::copy(src.begin(), src.end(), p_ + at);
    size_ += src.size();
    return p_ + at;
  }
  iterator insert(const_iterator pos, std::initializer_list<std::int64_t> v) {
    return insert(pos, v.begin(), v.end());
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  iterator erase(const_iterator first, const_iterator last) {
    const std::size_t a = static_cast<std::size_t>(first - p_);
    const std::size_t b = static_cast<std::size_t>(last - p_);
    std::move(p_ + b, p_ + size_, p_ + a);
    size_ -= b - a;
    return p_ + a;
  }
  std::vector<std::int64_t> to_vector() const { return {begin(), end()}; }

  friend bool operator==(const Shape& a, const Shape& b) noexcept {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Shape& a, const Shape& b) noexcept { return !(a == b); }
  friend bool operator<(const Shape& a, const Shape& b) noexcept {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  // The common case is a fixed 64-byte copy of the inline buffer (always
  // initialised), without a call to memmove or a branch per element.
  void copy_from(const Shape& o) {
    if (o.p_ == o.inline_ && p_ == inline_) {
      for (std::size_t i = 0; i < kInline; ++i) inline_[i] = o.inline_[i];
      size_ = o.size_;
    } else {
      assign(o.begin(), o.end());
    }
  }
  void grow(std::size_t n) {
    n = std::max(n, kInline * 2);
    auto* q = new std::int64_t[n];
    std::copy(p_, p_ + size_, q);
    release();
    p_ = q;
    cap_ = n;
  }
  void release() noexcept {
    if (p_ != inline_) delete[] p_;
    p_ = inline_;
    cap_ = kInline;
  }
  void take(Shape& o) noexcept {
    if (o.p_ == o.inline_) {
      std::copy(o.inline_, o.inline_ + o.size_, inline_);
      p_ = inline_;
      cap_ = kInline;
    } else {
      p_ = o.p_;
      cap_ = o.cap_;
      o.p_ = o.inline_;
      o.cap_ = kInline;
    }
    size_ = o.size_;
    o.size_ = 0;
  }

  std::int64_t inline_[kInline] = {};
  std::int64_t* p_ = inline_;
  std::size_t size_ = 0;
  std::size_t cap_ = kInline;
};

}  // namespace strata
