def greet(name):
    if name:
        print("Hello, " + name)
    return name


def main():
    greet("world")


if __name__ == "__main__":
    main()
