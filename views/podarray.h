#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace rpcscope {

// A growable array of trivially copyable values (pointers, positions) that grows with realloc instead of a
// new block and a copy. The index's lists of lab events hold one entry per event of a burst, millions: a
// std::vector doubling at a million entries copied 16 MB into fresh pages in one step, 30-75 ms of the GUI
// thread at once. Large blocks are mapped pages of their own, which realloc moves without copying them.
template <class T> class PodArray
{
    static_assert(std::is_trivially_copyable_v<T>);

public:
    PodArray() = default;
    ~PodArray() { std::free(m_data); }
    PodArray(const PodArray &o) { assign(o); }
    PodArray &operator=(const PodArray &o)
    {
        if (this != &o) {
            m_size = 0;
            assign(o);
        }
        return *this;
    }
    PodArray(PodArray &&o) noexcept
        : m_data(std::exchange(o.m_data, nullptr)), m_size(std::exchange(o.m_size, 0)),
          m_capacity(std::exchange(o.m_capacity, 0))
    {
    }
    PodArray &operator=(PodArray &&o) noexcept
    {
        if (this != &o) {
            std::free(m_data);
            m_data = std::exchange(o.m_data, nullptr);
            m_size = std::exchange(o.m_size, 0);
            m_capacity = std::exchange(o.m_capacity, 0);
        }
        return *this;
    }

    T *data() { return m_data; }
    const T *data() const { return m_data; }
    size_t size() const { return m_size; }
    size_t capacity() const { return m_capacity; }
    bool empty() const { return m_size == 0; }
    T *begin() { return m_data; }
    T *end() { return m_data + m_size; }
    const T *begin() const { return m_data; }
    const T *end() const { return m_data + m_size; }
    T &operator[](size_t i) { return m_data[i]; }
    const T &operator[](size_t i) const { return m_data[i]; }

    void push_back(const T &v)
    {
        if (m_size == m_capacity) grow(m_size + 1);
        m_data[m_size++] = v;
    }
    void insert(size_t at, const T &v)
    {
        if (m_size == m_capacity) grow(m_size + 1);
        std::memmove(m_data + at + 1, m_data + at, (m_size - at) * sizeof(T));
        m_data[at] = v;
        ++m_size;
    }
    // Drops the first n (moves the rest down).
    void erasePrefix(size_t n)
    {
        std::memmove(m_data, m_data + n, (m_size - n) * sizeof(T));
        m_size -= n;
    }
    // Shrinks to n (n <= size()).
    void truncate(size_t n) { m_size = n; }
    // Keeps the capacity, as std::vector does.
    void clear() { m_size = 0; }

private:
    void grow(size_t need)
    {
        size_t cap = m_capacity ? m_capacity * 2 : 16;
        while (cap < need)
            cap *= 2;
        void *p = std::realloc(m_data, cap * sizeof(T));
        if (!p) throw std::bad_alloc();
        m_data = static_cast<T *>(p);
        m_capacity = cap;
    }
    void assign(const PodArray &o)
    {
        if (o.m_size > m_capacity) grow(o.m_size);
        if (o.m_size) std::memcpy(m_data, o.m_data, o.m_size * sizeof(T));
        m_size = o.m_size;
    }

    T *m_data = nullptr;
    size_t m_size = 0;
    size_t m_capacity = 0;
};

} // namespace rpcscope
