#include "retryverdict.h"

namespace rpcscope {

const char *RetryVerdict::key(Kind kind)
{
    switch (kind) {
    case Kind::Conforms:
        return "conforms";
    case Kind::InFlight:
        return "in-flight";
    case Kind::Attempts:
        return "attempts";
    case Kind::Gap:
        return "gap";
    case Kind::NonRetryable:
        return "non-retryable";
    case Kind::Pushback:
        return "pushback";
    case Kind::AfterCommit:
        return "after-commit";
    case Kind::PastDeadline:
        return "past-deadline";
    }
    return "?";
}

const char *RetryVerdict::title(Kind kind)
{
    switch (kind) {
    case Kind::Conforms:
        return "conforms";
    case Kind::InFlight:
        return "no verdict yet";
    case Kind::Attempts:
        return "attempts differ";
    case Kind::Gap:
        return "gap outside envelope";
    case Kind::NonRetryable:
        return "non-retryable code retried";
    case Kind::Pushback:
        return "pushback ignored";
    case Kind::AfterCommit:
        return "retry after commit";
    case Kind::PastDeadline:
        return "retry past the deadline";
    }
    return "?";
}

std::array<RetryVerdict::Kind, RetryVerdict::kKinds> RetryVerdict::kinds()
{
    return {Kind::Conforms,     Kind::InFlight, Kind::Attempts,    Kind::Gap,
            Kind::NonRetryable, Kind::Pushback, Kind::AfterCommit, Kind::PastDeadline};
}

} // namespace rpcscope
